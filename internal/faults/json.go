package faults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// specJSON is a Spec as the admin API reads and writes it: durations as
// Go duration strings ("280ms"), absent when zero.
type specJSON struct {
	Latency   string  `json:"latency,omitempty"`
	P50       string  `json:"p50,omitempty"`
	P99       string  `json:"p99,omitempty"`
	Delay     string  `json:"delay,omitempty"`
	ErrorRate float64 `json:"error_rate,omitempty"`
	// RefuseRate is the share of calls refused at the door.
	RefuseRate float64 `json:"refuse_rate,omitempty"`
	Hang       string  `json:"hang,omitempty"`
	// Slots is how many calls are worked on at once.
	Slots int `json:"slots,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (s Spec) MarshalJSON() ([]byte, error) {
	str := func(d time.Duration) string {
		if d == 0 {
			return ""
		}
		return d.String()
	}
	return json.Marshal(specJSON{
		Latency: str(s.Latency), P50: str(s.P50), P99: str(s.P99),
		Delay: str(s.Delay), ErrorRate: s.ErrorRate, RefuseRate: s.RefuseRate, Hang: str(s.Hang), Slots: s.Slots,
	})
}

// UnmarshalJSON implements json.Unmarshaler. It rejects unknown fields and
// a spec that does not validate.
func (s *Spec) UnmarshalJSON(b []byte) error {
	var w specJSON
	if err := strictUnmarshal(b, &w); err != nil {
		return specError(err)
	}
	var out Spec
	for _, f := range []struct {
		name string
		text string
		dst  *time.Duration
	}{{"latency", w.Latency, &out.Latency}, {"p50", w.P50, &out.P50}, {"p99", w.P99, &out.P99},
		{"delay", w.Delay, &out.Delay}, {"hang", w.Hang, &out.Hang}} {
		if f.text == "" {
			continue
		}
		d, err := time.ParseDuration(f.text)
		if err != nil {
			return fmt.Errorf("%s: not a duration such as 280ms", f.name)
		}
		*f.dst = d
	}
	out.ErrorRate, out.RefuseRate, out.Slots = w.ErrorRate, w.RefuseRate, w.Slots
	if err := out.Validate(); err != nil {
		return err
	}
	*s = out
	return nil
}

// specError says what is wrong with a spec in the admin API's terms, not
// the decoder's (which would name Go types).
func specError(err error) error {
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typ) && (typ.Field == "error_rate" || typ.Field == "refuse_rate"):
		return fmt.Errorf("%s must be a number from 0 to 1", typ.Field)
	case errors.As(err, &typ) && typ.Field == "slots":
		return fmt.Errorf("slots must be a whole number from 1 to %d", MaxSlots)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Errorf("%s must be a duration such as \"280ms\"", typ.Field)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s (want latency, p50, p99, delay, error_rate, refuse_rate, hang or slots)", name)
	}
	return errors.New(`a fault spec must be an object such as {"latency":"280ms"}`)
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
