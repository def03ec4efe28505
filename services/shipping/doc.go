// Package shipping is Mercado's shipping service, the last hop of the
// checkout chain. It books shipments with a simulated carrier whose speed
// the lab controls with faults: lesson 7's degraded shipping is a carrier
// that hangs.
package shipping
