// Package catalog is Mercado's catalog service: products, prices and
// stock. Orders reserves stock here first in the checkout chain; the
// gateway's browse traffic reads products here directly and never touches
// payments or shipping.
//
// The package holds the domain (Product, Reservation, the Store it needs),
// the gRPC adapter (grpc.go), the in-memory store (memstore.go), and the
// service's wiring (config.go, run.go).
package catalog
