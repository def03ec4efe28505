// Package orders is Mercado's orders service. PlaceOrder runs the checkout
// chain of lesson 7 in its fixed order: catalog (reserve stock), then
// payments (charge), then shipping (create shipment).
//
// Each outbound call goes through pkg/deadline's client interceptor with
// the dependency's own cap (catalog 300 ms, payments 800 ms, shipping
// 300 ms by default). In budgeted mode the call gets min(cap, remaining −
// margin) and is skipped below the floor; in naive mode it gets its cap,
// blind to the clock. The file outbound.go is where that is wired.
package orders
