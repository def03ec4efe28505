package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `mercado budget plan` prints the table, or the JSON shape with
// --json; exit 0 when the plan fits, 1 when it does not, 2 for bad input.
func TestBudgetPlan(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tooLong := write("long.yaml", "target: 300ms\nreserve: 50ms\ngraph:\n  seq:\n    - call: {name: a, p99: 200ms}\n    - call: {name: b, p99: 100ms}\n")
	bad := write("bad.yaml", "target: 300ms\ngraph:\n  call: {name: a, p99: 2 seconds}\n")

	t.Run("table", func(t *testing.T) {
		var out, errb bytes.Buffer
		err := run(context.Background(), []string{"budget", "plan", "../../docs/budgets/card-800ms.yaml"}, env(nil), &out, &errb)
		if code := exitCode(err, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		for _, want := range []string{"target 800 ms − edge 20 ms − own 0 ms − reserve 130 ms = 650 ms available",
			"critical path p99 470 ms: fits", "catalog  critical     220     304       84"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
	})
	t.Run("json, not fitting", func(t *testing.T) {
		var out, errb bytes.Buffer
		err := run(context.Background(), []string{"budget", "plan", tooLong, "--json"}, env(nil), &out, &errb)
		if code := exitCode(err, &errb); code != 1 {
			t.Errorf("exit %d, want 1: %s", code, errb.String())
		}
		var got map[string]any
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%v:\n%s", err, out.String())
		}
		for _, k := range []string{"fits", "available_ms", "critical_path_p99_ms", "calls", "advice"} {
			if _, ok := got[k]; !ok {
				t.Errorf("no %q in %s", k, out.String())
			}
		}
		if len(got) != 5 || got["fits"] != false || got["available_ms"] != 250.0 || got["critical_path_p99_ms"] != 300.0 {
			t.Errorf("got %s", out.String())
		}
		call := got["calls"].([]any)[0].(map[string]any)
		if len(call) != 5 || call["name"] != "a" || call["p99_ms"] != 200.0 || call["slice_ms"] != 166.0 ||
			call["headroom_ms"] != -34.0 || call["criticality"] != "critical" {
			t.Errorf("calls[0] = %v", call)
		}
		if !strings.Contains(out.String(), "no configuration fixes this") || !strings.Contains(out.String(), "renegotiate the target to at least 350 ms") {
			t.Errorf("no redesigns in:\n%s", out.String())
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad file", []string{"budget", "plan", bad}, `mercado: budget plan: ` + bad + `:3: call a: p99 "2 seconds": want a duration such as 120ms or 2s`},
		{"no file", []string{"budget", "plan"}, "mercado: budget plan: name a call graph file (--help shows its shape)"},
		{"missing file", []string{"budget", "plan", filepath.Join(dir, "nope.yaml")}, "no such file"},
		{"no subcommand", []string{"budget"}, "mercado: budget: name a subcommand: plan or check"},
		{"unknown subcommand", []string{"budget", "spend"}, `mercado: budget: unknown subcommand "spend"`},
		{"bad flag", []string{"budget", "plan", bad, "--yaml"}, "flag provided but not defined: -yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errb bytes.Buffer
			err := run(context.Background(), tc.args, env(nil), new(bytes.Buffer), &errb)
			if code := exitCode(err, &errb); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("printed %q, want %q", errb.String(), tc.want)
			}
		})
	}
}
