package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/lab/shop"
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
			"critical path p99 470 ms: fits", "catalog  critical     220     304     84"} {
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
		if len(call) != 5 || call["name"] != "a" || call["p99_ms"] != 200.0 || call["cap_ms"] != 166.0 ||
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
		{"no subcommand", []string{"budget"}, "mercado: budget: name a subcommand: plan, predict, check or suggest"},
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

// --from takes the p99s of the calls a running shop has measured from its
// hop histograms; the file's graph gives the shape, and its p99s stand for
// the calls the shop does not make.
func TestBudgetPlanFromAShop(t *testing.T) {
	ctx := context.Background()
	s := slowShop(t, "plan-from")
	admin := "http://" + s.Gateway.AdminAddr
	file := filepath.Join(t.TempDir(), "checkout.yaml")
	plan := func(src string, args ...string) (map[string]float64, string, int) {
		t.Helper()
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		err := run(ctx, append([]string{"budget", "plan", file, "--json", "--from", admin}, args...), env(nil), &out, &errb)
		code := exitCode(err, &errb)
		var p struct {
			Calls []struct {
				Name  string  `json:"name"`
				P99Ms float64 `json:"p99_ms"`
			} `json:"calls"`
		}
		got := map[string]float64{}
		if code == 0 {
			if err := json.Unmarshal(out.Bytes(), &p); err != nil {
				t.Fatalf("%v:\n%s", err, out.String())
			}
			for _, c := range p.Calls {
				got[c.Name] = c.P99Ms
			}
		}
		return got, errb.String(), code
	}

	got, stderr, code := plan(`target: 1s
graph:
  seq:
    - call: {name: auth, p99: 15ms}
    - par:
        - call: {name: catalog}
        - call: {name: fraud, p99: 1ms}
    - call: {name: payments}
`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// A p99 read from the shop is at least the latency it was given (no
	// call takes less), and under the plan's 1 s target; with ten calls
	// it is the slowest call's bucket, which a busy machine can push
	// several buckets up, so the upper bound is no tighter.
	if got["catalog"] < 30 || got["catalog"] >= 1000 || got["fraud"] < 70 || got["fraud"] >= 1000 {
		t.Errorf("catalog p99 %v ms, fraud %v ms: want the shop's 30 and 70 ms or more, under 1 s", got["catalog"], got["fraud"])
	}
	if got["auth"] != 15 {
		t.Errorf("auth p99 %v ms, want the file's 15 (the shop makes no such call)", got["auth"])
	}
	if got["payments"] < 1 || got["payments"] >= 70 {
		t.Errorf("payments p99 %v ms, want the shop's, well below fraud's 70 ms", got["payments"])
	}
	if !strings.Contains(stderr, "catalog (orders/catalog, 10 calls)") || strings.Contains(stderr, "auth") {
		t.Errorf("stderr does not say where each p99 came from: %s", stderr)
	}

	// Once the gateway has called catalog too, "catalog" is ambiguous.
	resp, err := http.Get(s.GatewayURL() + "/api/products")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, stderr, code = plan("target: 1s\ngraph:\n  call: {name: catalog}\n")
	if code != 2 || !strings.Contains(stderr, `call "catalog": more than one service calls it (gateway/catalog, orders/catalog): name it gateway/catalog or orders/catalog`) {
		t.Errorf("exit %d, %s", code, stderr)
	}
	got, stderr, code = plan("target: 1s\ngraph:\n  call: {name: orders/catalog}\n")
	if code != 0 || got["orders/catalog"] < 30 || got["orders/catalog"] >= 1000 {
		t.Errorf("orders/catalog: exit %d, p99 %v ms: %s", code, got["orders/catalog"], stderr)
	}
	// A call neither the file nor the shop knows has no p99.
	_, stderr, code = plan("target: 1s\ngraph:\n  call: {name: ledger}\n")
	if code != 2 || !strings.Contains(stderr, `call "ledger": no p99`) {
		t.Errorf("exit %d, %s", code, stderr)
	}
	// A shop that does not answer is not a usage error.
	_, stderr, code = plan("target: 1s\ngraph:\n  call: {name: auth, p99: 1ms}\n", "--from", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "--from http://127.0.0.1:1") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// `mercado budget predict` prints each mode's percentiles and misses
// beside the plan's arithmetic, or JSON; a file it cannot use is a usage
// error.
func TestBudgetPredict(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"budget", "predict", "../../docs/budgets/predict-chain.yaml"}, env(nil), &out, &errb)
	if code := exitCode(err, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"the plan's arithmetic (edge + the sum of p99s along seq, the max across par + own): 1204 ms",
		"mode      p50 ms  p99 ms  p99.9 ms  miss the target  of which failed", "naive     751     1016"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	err = run(context.Background(), []string{"budget", "predict", "../../docs/budgets/predict-fanout.yaml", "--json"}, env(nil), &out, &errb)
	if code := exitCode(err, &errb); code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errb.String())
	}
	var p struct {
		PlanP99Ms int64 `json:"plan_p99_ms"`
		Modes     []struct {
			Mode  string  `json:"mode"`
			P99Ms float64 `json:"p99_ms"`
		} `json:"modes"`
		Assumptions []string `json:"assumptions"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if len(p.Modes) != 2 || p.Modes[1].Mode != "budgeted" || p.Modes[1].P99Ms <= float64(p.PlanP99Ms) || len(p.Assumptions) != 1 {
		t.Errorf("fan-out: %+v: want both modes, a p99 above the plan's max across the par, and payments' assumption", p)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("target: 1s\ngraph:\n  call: {name: a, p50: 300ms, p99: 200ms}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	err = run(context.Background(), []string{"budget", "predict", bad}, env(nil), &out, &errb)
	if code := exitCode(err, &errb); code != 2 || !strings.Contains(errb.String(), "bad.yaml:3: call a: p50 300 ms is more than its p99 200 ms") {
		t.Errorf("p50 over p99: exit %d: %s", code, errb.String())
	}
}

// With --from, the calls a running shop has measured take its hop
// histograms: two calls at once cost the slower.
func TestBudgetPredictFromAShop(t *testing.T) {
	ctx := context.Background()
	s := slowShop(t, "predict-from")
	file := filepath.Join(t.TempDir(), "checkout.yaml")
	if err := os.WriteFile(file, []byte("target: 1s\ngraph:\n  seq:\n    - par:\n        - call: {name: catalog}\n        - call: {name: fraud}\n    - call: {name: payments}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := run(ctx, []string{"budget", "predict", file, "--json", "--from", "http://" + s.Gateway.AdminAddr}, env(nil), &out, &errb)
	if code := exitCode(err, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "fraud (orders/fraud, 10 calls)") {
		t.Errorf("stderr does not say what was measured: %s", errb.String())
	}
	var p struct {
		Modes []struct {
			P50Ms float64 `json:"p50_ms"`
		} `json:"modes"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	// Every fraud screen took 70 ms, in the histogram's (50, 100] ms
	// bucket, so the pair's median is in it too; a busy machine may push
	// a few calls a bucket up, never below.
	if got := p.Modes[0].P50Ms; got < 50 || got >= 200 {
		t.Errorf("predicted p50 %.1f ms, want the fraud screen's bucket, (50, 100] ms, or one above", got)
	}
}

// slowShop starts a shop whose stock reservation takes 30 ms and fraud
// screen 70 ms, and makes ten checkouts on it, keyed key-0 to key-9.
func slowShop(t *testing.T, key string) *shop.Shop {
	t.Helper()
	cfg := shop.EphemeralConfig()
	cfg.Catalog.Faults = faults.Set{"ReserveStock": {Latency: 30 * time.Millisecond}}
	cfg.Payments.Faults = faults.Set{"ScreenOrder": {Latency: 70 * time.Millisecond}}
	s, err := shop.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	checkouts(t, s.GatewayURL(), key, 10)
	return s
}

// checkouts makes n checkouts at the gateway, keyed key-0 to key-(n−1),
// each answered 201.
func checkouts(t *testing.T, gatewayURL, key string, n int) {
	t.Helper()
	for i := range n {
		if code := checkout(t, gatewayURL, fmt.Sprintf("%s-%d", key, i)); code != http.StatusCreated {
			t.Fatalf("checkout %s-%d: %d", key, i, code)
		}
	}
}
