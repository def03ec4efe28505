package jsonbody_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/internal/jsonbody"
)

type item struct {
	SKU string `json:"sku"`
	Qty int64  `json:"qty"`
}

type body struct {
	Name  string `json:"name"`
	Items []item `json:"items"`
	Ok    *bool  `json:"ok"`
}

// spec refuses every value with a reason of its own, as faults.Spec does.
type spec struct{}

func (*spec) UnmarshalJSON([]byte) error { return errors.New("p50 and p99 go together") }

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, in string
		dst                   any
		code                  int
		want                  string
	}{
		{"valid", "application/json", `{"name":"a","items":[{"sku":"x","qty":1}]}`, &body{}, 0, ""},
		{"charset", "application/json; charset=utf-8", `{}`, &body{}, 0, ""},
		{"no content type", "", `{}`, &body{}, 415, "Content-Type must be application/json"},
		{"text", "text/plain", `{}`, &body{}, 415, "Content-Type must be application/json"},
		{"too big", "application/json", `{"name":"` + strings.Repeat("a", 200) + `"}`, &body{}, 413, "body is larger than 100 bytes"},
		{"empty", "application/json", ``, &body{}, 400, "body is empty"},
		{"cut short", "application/json", `{"name":`, &body{}, 400, "malformed JSON: unexpected end"},
		{"syntax", "application/json", `{"name" 1}`, &body{}, 400, "malformed JSON at byte"},
		{"two values", "application/json", `{}{}`, &body{}, 400, "body must hold one JSON value"},
		{"null", "application/json", `null`, &body{}, 400, "body must be a JSON object, not null"},
		{"array", "application/json", `[]`, &body{}, 400, "body must be an object"},
		{"unknown field", "application/json", `{"nope":1}`, &body{}, 400, `unknown field "nope"`},
		{"string for a string", "application/json", `{"name":1}`, &body{}, 400, `field "name" must be a string`},
		{"nested number", "application/json", `{"items":[{"qty":1.5}]}`, &body{}, 400, `field "items.qty" must be a whole number in range`},
		{"boolean", "application/json", `{"ok":"yes"}`, &body{}, 400, `field "ok" must be true or false`},
		{"a type's own reason", "application/json", `{}`, &spec{}, 400, "p50 and p99 go together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.in))
			if tc.contentType != "" {
				r.Header.Set("Content-Type", tc.contentType)
			}
			code, err := jsonbody.Decode(w, r, 100, tc.dst)
			if code != tc.code || (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Decode = %d, %v; want %d, %q", code, err, tc.code, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "json:") {
				t.Errorf("the reason shows the decoder's text: %v", err)
			}
			if w.Body.Len() != 0 {
				t.Errorf("Decode wrote %q; answering is the caller's job", w.Body)
			}
		})
	}
}
