package mode

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Overrides switch single mechanisms on top of a mode's preset, so a
// learner can see what each one buys ("budgeted without breakers"). A nil
// field keeps the preset.
type Overrides struct {
	Caps         *bool    `json:"caps,omitempty"`
	EdgeDeadline *bool    `json:"edge_deadline,omitempty"`
	ClipToBudget *bool    `json:"clip_to_budget,omitempty"`
	Admission    *bool    `json:"admission,omitempty"`
	HonourCancel *bool    `json:"honour_cancel,omitempty"`
	Bulkheads    *bool    `json:"bulkheads,omitempty"`
	Breakers     *bool    `json:"breakers,omitempty"`
	Retries      *Retries `json:"retries,omitempty"`
	Idempotency  *bool    `json:"idempotency,omitempty"`
	Outbox       *bool    `json:"outbox,omitempty"`
	Fanout       *Fanout  `json:"fanout,omitempty"`
	Classes      *bool    `json:"classes,omitempty"`
	Criticality  *bool    `json:"criticality,omitempty"`
	// ConnectTimeout is connect_timeout in the flag syntax.
	ConnectTimeout *bool `json:"connect_timeout,omitempty"`
	Hedging        *bool `json:"hedging,omitempty"`
}

// Apply returns m with o's switches applied.
func (m Mechanisms) Apply(o Overrides) Mechanisms {
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	set(&m.Caps, o.Caps)
	set(&m.EdgeDeadline, o.EdgeDeadline)
	set(&m.ClipToBudget, o.ClipToBudget)
	set(&m.Admission, o.Admission)
	set(&m.HonourCancel, o.HonourCancel)
	set(&m.Bulkheads, o.Bulkheads)
	set(&m.Breakers, o.Breakers)
	set(&m.Idempotency, o.Idempotency)
	set(&m.Outbox, o.Outbox)
	set(&m.Classes, o.Classes)
	set(&m.Criticality, o.Criticality)
	set(&m.ConnectTimeout, o.ConnectTimeout)
	set(&m.Hedging, o.Hedging)
	if o.Retries != nil {
		m.Retries = *o.Retries
	}
	if o.Fanout != nil {
		m.Fanout = *o.Fanout
	}
	return m
}

// Validate reports an override that names no valid value.
func (o Overrides) Validate() error {
	if o.Retries != nil {
		if _, err := ParseRetries(string(*o.Retries)); err != nil {
			return err
		}
	}
	if o.Fanout != nil {
		if _, err := ParseFanout(string(*o.Fanout)); err != nil {
			return err
		}
	}
	return nil
}

// overrideFields maps each switch's name in the flag syntax to its field.
func (o *Overrides) fields() map[string]**bool {
	return map[string]**bool{
		"caps": &o.Caps, "edge_deadline": &o.EdgeDeadline, "clip_to_budget": &o.ClipToBudget,
		"admission": &o.Admission, "honour_cancel": &o.HonourCancel,
		"bulkheads": &o.Bulkheads, "breakers": &o.Breakers, "idempotency": &o.Idempotency, "outbox": &o.Outbox,
		"classes":     &o.Classes,
		"criticality": &o.Criticality, "connect_timeout": &o.ConnectTimeout,
		"hedging": &o.Hedging,
	}
}

// Set implements flag.Value: a comma-separated list of name=value, such
// as "breakers=off,retries=naive". Booleans take on/off or true/false;
// retries takes naive, budgeted or off, and fanout parallel or sequential.
func (o *Overrides) Set(text string) error {
	var errs []error
	for _, kv := range strings.Split(text, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%q: want name=value", kv))
			continue
		}
		name = strings.ReplaceAll(strings.TrimSpace(name), "-", "_")
		val = strings.TrimSpace(val)
		if name == "retries" {
			r, err := ParseRetries(val)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			o.Retries = &r
			continue
		}
		if name == "fanout" {
			f, err := ParseFanout(val)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			o.Fanout = &f
			continue
		}
		field, known := o.fields()[name]
		if !known {
			errs = append(errs, fmt.Errorf("unknown mechanism %q", name))
			continue
		}
		b, err := parseSwitch(val)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		*field = &b
	}
	return errors.Join(errs...)
}

func parseSwitch(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%q is not on or off", v)
	}
	return b, nil
}

// String implements flag.Value.
func (o *Overrides) String() string {
	if o == nil {
		return ""
	}
	var parts []string
	for name, f := range o.fields() {
		if *f != nil {
			parts = append(parts, fmt.Sprintf("%s=%t", name, **f))
		}
	}
	if o.Retries != nil {
		parts = append(parts, "retries="+string(*o.Retries))
	}
	if o.Fanout != nil {
		parts = append(parts, "fanout="+string(*o.Fanout))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Variant is the preset a scenario's mode name starts with, and the
// switches it turns on top of it: "budgeted+hedging" is budgeted with
// hedging on, so a scenario can compare a mechanism with the mode it is
// added to. A bare mode name is the preset alone.
func Variant(name string) (Mode, Overrides, error) {
	base, rest, plus := strings.Cut(name, "+")
	var o Overrides
	m, err := Parse(base)
	if err != nil {
		return "", o, err
	}
	if !plus {
		return m, o, nil
	}
	for _, sw := range strings.Split(rest, "+") {
		if _, known := o.fields()[sw]; !known {
			return "", o, fmt.Errorf("mode %q: %q is not a mechanism switched on or off (such as hedging)", name, sw)
		}
		if err := o.Set(sw + "=on"); err != nil {
			return "", o, err
		}
	}
	return m, o, nil
}

// Join returns o with p's switches set on top of it.
func (o Overrides) Join(p Overrides) Overrides {
	for name, f := range p.fields() {
		if *f != nil {
			*o.fields()[name] = *f
		}
	}
	if p.Retries != nil {
		o.Retries = p.Retries
	}
	if p.Fanout != nil {
		o.Fanout = p.Fanout
	}
	return o
}
