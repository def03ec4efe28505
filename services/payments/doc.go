// Package payments is Mercado's payments service. It charges customers
// through a simulated payment service provider (the PSP, whose speed the
// lab controls with faults) and keeps one charge per payment key: a second
// charge under the same key returns the first.
package payments
