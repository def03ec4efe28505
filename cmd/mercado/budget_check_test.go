package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/budgetcheck"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/lab/shop"
)

// budgetCheck runs `mercado budget check args...` and returns its exit
// status, what it printed and its report as JSON (with --json).
func budgetCheck(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"budget", "check"}, args...),
		func(k string) string { return env[k] }, &stdout, &stderr)
	return exitCode(err, &stderr), stdout.String() + stderr.String()
}

type checkReport struct {
	Source   string
	OK       bool
	Findings []budgetcheck.Finding
}

func budgetCheckJSON(t *testing.T, env map[string]string, args ...string) (int, checkReport) {
	t.Helper()
	code, out := budgetCheck(t, env, append(args, "--json")...)
	var r checkReport
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&r); err != nil {
		t.Fatalf("budget check %v: not JSON: %v\n%s", args, err, out)
	}
	return code, r
}

func finding(r checkReport, rule, where string) (budgetcheck.Finding, bool) {
	for _, f := range r.Findings {
		if f.Rule == rule && strings.HasPrefix(f.Where, where) {
			return f, true
		}
	}
	return budgetcheck.Finding{}, false
}

func TestBudgetCheckNaiveFailsBudgetedPasses(t *testing.T) {
	code, r := budgetCheckJSON(t, nil, "--mode", "naive")
	if code != 1 || r.OK {
		t.Fatalf("--mode naive: exit %d, ok %v; want 1 and findings", code, r.OK)
	}
	if f, ok := finding(r, budgetcheck.RuleRetriesMultiplied, "gateway → orders"); !ok ||
		!strings.Contains(f.Problem, "3 × gateway → orders, 3 × orders → each") || !strings.Contains(f.Problem, "9 calls of each of catalog, fraud, payments") {
		t.Errorf("naive: want retries 3 × 3 across gateway and orders, got %+v", r.Findings)
	}
	if f, ok := finding(r, budgetcheck.RuleUnbounded, "gateway → orders"); !ok || !strings.Contains(f.Setting, "--orders-cap=0") {
		t.Errorf("naive: want the unbounded gateway → orders call, got %+v", r.Findings)
	}
	if code, out := budgetCheck(t, nil, "--mode", "budgeted"); code != 0 || !strings.Contains(out, "no findings") {
		t.Fatalf("--mode budgeted: exit %d\n%s", code, out)
	}
	// One mechanism is enough: blind retries at both layers again.
	code, r = budgetCheckJSON(t, nil, "--mechanisms", "retries=naive")
	if _, ok := finding(r, budgetcheck.RuleRetriesMultiplied, "gateway → orders"); code != 1 || !ok {
		t.Fatalf("--mechanisms retries=naive: exit %d, %+v", code, r.Findings)
	}
	// The environment is read as serve reads it.
	if code, _ := budgetCheck(t, map[string]string{"MERCADO_MODE": "naive"}); code != 1 {
		t.Fatalf("MERCADO_MODE=naive: exit %d, want 1", code)
	}
}

func TestBudgetCheckFlagsReachTheRules(t *testing.T) {
	code, r := budgetCheckJSON(t, nil, "--max-budget", "500ms", "--budget", "400ms", "--catalog-cap", "10ms")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %+v", code, r.Findings)
	}
	if f, ok := finding(r, budgetcheck.RuleCapAboveBudget, "orders → payments"); !ok || f.Setting != "orders --payments-cap=800ms" {
		t.Errorf("want payments' 800ms cap above a 500ms budget, got %+v", r.Findings)
	}
	if _, ok := finding(r, budgetcheck.RuleCapBelowFloor, "orders → catalog"); !ok {
		t.Errorf("want catalog's 10ms cap below the 20ms floor, got %+v", r.Findings)
	}
	if code, r := budgetCheckJSON(t, nil, "--margin", "25ms"); code != 1 || len(r.Findings) != 1 || r.Findings[0].Rule != budgetcheck.RuleMarginFloor {
		t.Errorf("--margin 25ms: exit %d, %+v", code, r.Findings)
	}
}

func TestBudgetCheckUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--compose", "docker-compose.yml", "--k8s", "k8s/overlays/budgeted"},
		{"--mode", "lax"},
		{"--floor", "2s"},
		{"--compose", "no-such-file.yml"},
		{"stray"},
	} {
		if code, out := budgetCheck(t, nil, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, out)
		}
	}
}

func TestBudgetCheckDeploymentFiles(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want int
	}{
		{[]string{"--compose", "../../docker-compose.yml"}, nil, 0},
		{[]string{"--compose", "../../docker-compose.yml"}, map[string]string{"MERCADO_MODE": "naive"}, 1},
		{[]string{"--compose", "../../docker-compose.yml"}, map[string]string{"MERCADO_PAYMENTS_CAP": "20s"}, 1},
		{[]string{"--k8s", "../../k8s/overlays/budgeted"}, nil, 0},
		{[]string{"--k8s", "../../k8s/overlays/naive"}, nil, 1},
		{[]string{"--k8s", "../../k8s/overlays/fragile"}, nil, 1},
		{[]string{"--compose", "../../docker-compose.yml"}, map[string]string{"MERCADO_MODE": "fragile"}, 1},
	} {
		code, out := budgetCheck(t, c.env, c.args...)
		if code != c.want {
			t.Errorf("%v %v: exit %d, want %d\n%s", c.env, c.args, code, c.want, out)
		}
	}
}

func TestBudgetCheckK8sOffline(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no kubectl
	for dir, want := range map[string]string{"budgeted": "no findings", "naive": "unbounded_call: gateway → orders",
		"fragile": "unbounded_call: orders → shipping"} {
		_, out := budgetCheck(t, nil, "--k8s", "../../k8s/overlays/"+dir)
		if !strings.Contains(out, want) {
			t.Errorf("%s offline: want %q in\n%s", dir, want, out)
		}
	}
}

// TestBudgetCheckFromRunningShop composes the contracts of an in-process
// shop: budgeted passes, naive fails; a slow leaf shows in the contracts
// once it has had traffic.
func TestBudgetCheckFromRunningShop(t *testing.T) {
	for _, m := range []mode.Mode{mode.Budgeted, mode.Naive} {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			cfg := shop.EphemeralConfig()
			cfg.Shared.Mode = m
			// The fraud screen is slower than orders' 300ms cap for it:
			// more than one call in a hundred runs into the cap.
			cfg.Payments.Faults = faults.Set{sim.PaymentsScreenOrder: {Latency: 400 * time.Millisecond}}
			s, err := shop.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			adminURL := "http://" + s.Gateway.AdminAddr
			code, r := budgetCheckJSON(t, nil, "--from", adminURL)
			if code != 1 {
				t.Fatalf("exit %d, want 1 (the slow screen): %+v", code, r.Findings)
			}
			if _, ok := finding(r, budgetcheck.RuleCapBelowP99, "orders → fraud"); ok {
				t.Fatalf("a cap below p99 with no traffic yet: %+v", r.Findings)
			}
			for i := range 3 {
				checkout(t, s.GatewayURL(), fmt.Sprintf("check-%s-%d", m, i))
			}
			_, r = budgetCheckJSON(t, nil, "--from", adminURL)
			if _, ok := finding(r, budgetcheck.RuleCapBelowP99, "orders → fraud"); !ok {
				t.Errorf("want fraud's cap below its observed p99, got %+v", r.Findings)
			}
			_, naiveOnly := finding(r, budgetcheck.RuleRetriesMultiplied, "gateway → orders")
			_, promise := finding(r, budgetcheck.RulePromiseAboveWait, "orders → fraud")
			if naiveOnly != (m == mode.Naive) || promise != (m == mode.Naive) {
				t.Errorf("%s: retries multiplied %v, fraud promising past orders' wait %v; want both only in naive: %+v", m, naiveOnly, promise, r.Findings)
			}
			var c budgetcheck.Contract
			getContract(t, "http://"+s.Orders.AdminAddr, &c)
			// The screen failed every checkout before the charge: the
			// fraud hop is observed, payments' is not, so the need is
			// still partly from config, and holds the screen's time.
			if len(c.Needs) == 0 || c.Needs[0].Route != "Checkout" || c.Needs[0].Source != "config" || c.Needs[0].MS < 300 {
				t.Errorf("orders' needs after traffic: %+v", c.Needs)
			}
			for _, call := range c.Calls {
				if want := call.Dep == "fraud"; (want || call.Dep == "payments" || call.Dep == "shipping") && want != (call.Observed > 0) {
					t.Errorf("orders' call to %s observed over %d calls", call.Dep, call.Observed)
				}
			}
		})
	}
}

// checkout makes one checkout at the gateway under key and returns its
// status.
func checkout(t *testing.T, gatewayURL, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, gatewayURL+"/api/checkout",
		strings.NewReader(`{"customer":"ana","items":[{"sku":"tea-sencha","qty":1}],"address":"1 Main St"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func getContract(t *testing.T, adminURL string, c *budgetcheck.Contract) {
	t.Helper()
	resp, err := http.Get(adminURL + "/admin/budget")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /admin/budget: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(resp.Body).Decode(c); err != nil {
		t.Fatal(err)
	}
}

// The fragile mode fails the check with every call unbounded, the
// gateway's and orders' alike, each finding naming the caps; its caps
// back on (stage 1), the calls orders makes are bounded again.
func TestBudgetCheckFragileNamesEveryUnboundedCall(t *testing.T) {
	code, r := budgetCheckJSON(t, nil, "--mode", "fragile")
	if code != 1 || r.OK {
		t.Fatalf("--mode fragile: exit %d, ok %v; want 1 and findings", code, r.OK)
	}
	calls := []string{"gateway → orders", "gateway → catalog", "orders → catalog", "orders → fraud",
		"orders → payments", "orders → shipping", "orders → estimate", "orders → audit"}
	for _, where := range calls {
		f, ok := finding(r, budgetcheck.RuleUnbounded, where)
		if !ok || !strings.Contains(f.Setting, "caps off") {
			t.Errorf("fragile: want %s unbounded with the caps off, got %+v", where, f)
		}
	}
	_, r = budgetCheckJSON(t, nil, "--mode", "fragile", "--mechanisms", "caps=on,connect_timeout=on")
	for _, where := range calls[2:] {
		if f, ok := finding(r, budgetcheck.RuleUnbounded, where); ok {
			t.Errorf("fragile with caps=on: %s is still unbounded: %+v", where, f)
		}
	}
	if _, ok := finding(r, budgetcheck.RuleUnbounded, "gateway → orders"); !ok {
		t.Errorf("fragile with caps=on: want gateway → orders unbounded still (no --orders-cap), got %+v", r.Findings)
	}
}

// A running fragile shop publishes contracts that promise no bound, at
// every service, the leaves included, and an edge with no write timeout;
// composed, they fail the check with the unbounded calls.
func TestFragileShopContractsPromiseNoBound(t *testing.T) {
	cfg := shop.EphemeralConfig()
	cfg.Shared.Mode = mode.Fragile
	s, err := shop.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	for _, p := range s.Processes() {
		var c budgetcheck.Contract
		getContract(t, "http://"+p.AdminAddr, &c)
		if c.Mode != mode.Fragile || c.Mechanisms.Caps || len(c.Promises) == 0 {
			t.Errorf("%s: contract in mode %s with caps %v and %d promises, want fragile's", p.Name, c.Mode, c.Mechanisms.Caps, len(c.Promises))
		}
		for _, pr := range c.Promises {
			if pr.Bounded || pr.ByDeadline {
				t.Errorf("%s promises %+v, want no bound", p.Name, pr)
			}
		}
		if c.Edge != nil && c.Edge.WriteTimeoutMS != 0 {
			t.Errorf("%s: the edge's write timeout is %v ms with caps off, want none", p.Name, c.Edge.WriteTimeoutMS)
		}
	}
	code, r := budgetCheckJSON(t, nil, "--from", "http://"+s.Gateway.AdminAddr)
	if _, ok := finding(r, budgetcheck.RuleUnbounded, "orders → shipping"); code != 1 || !ok {
		t.Errorf("budget check --from a fragile shop: exit %d, %+v; want orders → shipping unbounded", code, r.Findings)
	}
}
