// Package payments is Mercado's payments service. It charges customers
// through a simulated payment service provider (the PSP, whose speed the
// lab controls with faults), which remembers each payment key's first
// answer in a store of its own (provider.go): a second charge under the
// same key returns the first, and payments asks the provider by key what
// happened to a charge.
package payments
