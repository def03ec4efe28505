package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
)

// Decode reads r's body into dst. On failure it returns the HTTP status
// to answer with (400, 413 or 415) and the reason; it writes nothing.
func Decode(w http.ResponseWriter, r *http.Request, maxBytes int64, dst any) (int, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return http.StatusUnsupportedMediaType, errors.New("Content-Type must be application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		return describe(err, maxBytes)
	}
	// A body of "null" would leave dst as it was, or empty a map: it is
	// refused like any other non-object.
	if string(bytes.TrimSpace(body)) == "null" {
		return http.StatusBadRequest, errors.New("body must be a JSON object, not null")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return describe(err, maxBytes)
	}
	// Only the end of the body may follow the value. (dec.More would let a
	// stray "]" or "}" through: it reports false for those.)
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return http.StatusBadRequest, errors.New("body must hold one JSON value")
	}
	return 0, nil
}

// describe turns a decoding failure into a status and a reason in the
// API's terms.
func describe(err error, maxBytes int64) (int, error) {
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Errorf("body is larger than %d bytes", maxBytes)
	case errors.As(err, &syntax):
		return http.StatusBadRequest, fmt.Errorf("malformed JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return http.StatusBadRequest, fmt.Errorf("body must be %s", kind(typ.Type))
		}
		return http.StatusBadRequest, fmt.Errorf("field %q must be %s", typ.Field, kind(typ.Type))
	case errors.Is(err, io.EOF):
		return http.StatusBadRequest, errors.New("body is empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return http.StatusBadRequest, errors.New("malformed JSON: unexpected end")
	}
	msg := err.Error()
	// DisallowUnknownFields reports an unknown field in its text only.
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return http.StatusBadRequest, fmt.Errorf("unknown field %s", name)
	}
	if strings.HasPrefix(msg, "json: ") {
		return http.StatusBadRequest, errors.New("malformed JSON")
	}
	// A type's own UnmarshalJSON said what is wrong with its value.
	return http.StatusBadRequest, err
}

// kind names what a JSON value for a Go type looks like to a client.
func kind(t reflect.Type) string {
	if t == nil {
		return "a JSON value of another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}
