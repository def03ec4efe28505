// Package lab runs Mercado's labs: the real services, started in-process on
// loopback, driven over real HTTP and gRPC, with every figure measured.
package lab
