package faults_test

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/internal/faults"
)

// FuzzParse checks the fault-spec parsers, the flag syntax (Parse, Set.Set)
// and the admin API's JSON (Spec.UnmarshalJSON), against arbitrary text.
// Its seed corpus is testdata/fuzz/FuzzParse; run it with
//
//	go test -run '^$' -fuzz '^FuzzParse$' ./internal/faults/
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string) {
		set, err := faults.Parse(text)
		if err == nil {
			for m, spec := range set {
				if m == "" || m != strings.TrimSpace(m) || strings.ContainsAny(m, ":;") {
					t.Fatalf("Parse(%q) made method %q", text, m)
				}
				if err := spec.Validate(); err != nil {
					t.Fatalf("Parse(%q) accepted %s: %+v, which does not validate: %v", text, m, spec, err)
				}
			}
			// What String writes (the flag's default, the admin's view)
			// parses back to the same set.
			str := set.String()
			back, err := faults.Parse(str)
			if err != nil {
				t.Fatalf("Parse(%q).String() = %q, which does not parse: %v", text, str, err)
			}
			if !maps.Equal(set, back) {
				t.Fatalf("Parse(%q) = %v; its String %q parses to %v", text, set, str, back)
			}
		}

		// Set on a set that already holds specs: never panics, and what it
		// adds validates even when a later part fails.
		s := faults.Set{"ReserveStock": {}}
		_ = s.Set(text)
		for m, spec := range s {
			if err := spec.Validate(); err != nil {
				t.Fatalf("Set(%q) left %s: %+v, which does not validate: %v", text, m, spec, err)
			}
		}

		// The same text as the admin API's JSON: called directly (any bytes)
		// and through encoding/json (which hands it one valid value).
		var direct faults.Spec
		if err := direct.UnmarshalJSON([]byte(text)); err == nil {
			if err := direct.Validate(); err != nil {
				t.Fatalf("UnmarshalJSON(%q) accepted %+v, which does not validate: %v", text, direct, err)
			}
		}
		var spec faults.Spec
		if err := json.Unmarshal([]byte(text), &spec); err != nil {
			return
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("UnmarshalJSON(%q) accepted %+v, which does not validate: %v", text, spec, err)
		}
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", spec, err)
		}
		var again faults.Spec
		if err := json.Unmarshal(b, &again); err != nil || again != spec {
			t.Fatalf("UnmarshalJSON(%q) = %+v; its JSON %s reads back as %+v, %v", text, spec, b, again, err)
		}
	})
}
