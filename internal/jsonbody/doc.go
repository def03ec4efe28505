// Package jsonbody reads JSON request bodies strictly, the one way
// Mercado's HTTP APIs (public and admin) read them: a JSON content type,
// a bounded size, no unknown fields, exactly one value, and an error whose
// text is fit for the client — it names the field and what it must be,
// never the decoder's Go types.
package jsonbody
