package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzDecodeCheckout feeds arbitrary bodies through the checkout's request
// decoding (decodeJSON, then validate). Its seed corpus is
// testdata/fuzz/FuzzDecodeCheckout; run it with
//
//	go test -run '^$' -fuzz '^FuzzDecodeCheckout$' ./services/gateway/
func FuzzDecodeCheckout(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/api/checkout", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")

		var req CheckoutRequest
		status, err := decodeJSON(w, r, DefaultMaxBody, &req)
		switch status {
		case 0, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		default:
			t.Fatalf("decodeJSON(%q) status %d; want 0, 400, 413 or 415", body, status)
		}
		if (status == 0) != (err == nil) {
			t.Fatalf("decodeJSON(%q) = %d, %v; want status 0 exactly when there is no error", body, status, err)
		}
		// Answering is the handler's job: decodeJSON writes nothing.
		if w.Body.Len() != 0 || len(w.Header()) != 0 {
			t.Fatalf("decodeJSON(%q) wrote to the response: headers %v, body %q", body, w.Header(), w.Body)
		}
		if status == http.StatusRequestEntityTooLarge && len(body) <= DefaultMaxBody {
			t.Fatalf("decodeJSON(%d bytes) = 413; the limit is %d", len(body), DefaultMaxBody)
		}
		if status != 0 {
			return
		}
		// "One value": an accepted body is a single JSON value, nothing after.
		if !json.Valid(body) {
			t.Fatalf("decodeJSON(%q) accepted a body that is not exactly one JSON value", body)
		}
		if req.validate() != nil {
			return
		}
		// The documented limits (matching orders' own).
		switch {
		case len(req.Customer) < 1 || len(req.Customer) > maxTextBytes:
			t.Fatalf("validate passed customer of %d bytes", len(req.Customer))
		case len(req.Address) < 1 || len(req.Address) > maxTextBytes:
			t.Fatalf("validate passed address of %d bytes", len(req.Address))
		case len(req.Items) < 1 || len(req.Items) > maxItems:
			t.Fatalf("validate passed %d items", len(req.Items))
		}
		for i, it := range req.Items {
			if it.Qty < 1 || it.Qty > maxQty || it.SKU == "" || len(it.SKU) > 64 || it.UnitPriceCents != 0 {
				t.Fatalf("validate passed items[%d] = %+v", i, it)
			}
		}
	})
}
