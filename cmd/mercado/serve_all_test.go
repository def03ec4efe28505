package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/timing"
)

// The five services, as `mercado serve <name>` names them.
var serviceNames = faults.Services()

// flagCase is one flag of `mercado serve <name>`, run through the named
// service alone and through `serve all`: both must show the same effect.
type flagCase struct {
	value string
	// shows is how the flag's value reads in a service's configuration
	// log line; empty means value itself.
	shows string
	// check asserts the flag's effect on one service of a run; nil when
	// the configuration line is all there is to see without load.
	check func(t *testing.T, name string, s running)
	// failAlone are the services that, given the flag, must fail to
	// start with an error containing failure (a runtime error, exit 1);
	// `serve all`, which starts them, must fail the same way.
	failAlone []string
	failure   string
	// quiet: the flag silences the info lines, the configuration and
	// serving lines with them; the run is checked by what it logs.
	quiet bool
}

// flagCases covers every flag any `serve <name> --help` lists, except
// those `serve all` refuses (refusedUnderAll); TestServeFlagTablesAreComplete
// holds both tables to the help, so that a new flag cannot be forgotten.
var flagCases = map[string]flagCase{
	"mode": {value: "fragile", check: func(t *testing.T, name string, s running) {
		modeShows("mode", "fragile")(t, name, s)
		if got := adminMode(t, s)["mechanisms"].(map[string]any)["caps"]; got != false {
			t.Errorf("%s: GET /admin/mode shows caps %v in the fragile mode, want false", name, got)
		}
	}},
	"margin":          {value: "7ms", check: modeShows("margin_ms", float64(7))},
	"floor":           {value: "30ms", check: modeShows("floor_ms", float64(30))},
	"connect-timeout": {value: "1.5s", check: modeShows("connect_timeout_ms", float64(1500))},
	"mechanisms": {value: "breakers=off,caps=off", shows: "breakers=false,caps=false", check: func(t *testing.T, name string, s running) {
		for _, m := range []string{"breakers", "caps"} {
			if got := adminMode(t, s)["mechanisms"].(map[string]any)[m]; got != false {
				t.Errorf("%s: GET /admin/mode shows %s %v, want false", name, m, got)
			}
		}
	}},
	"admin-token": {value: "tok-shared-1", shows: "(set)", check: func(t *testing.T, name string, s running) {
		for _, tc := range []struct {
			auth string
			want int
		}{{"", http.StatusUnauthorized}, {"Bearer wrong", http.StatusUnauthorized}, {"Bearer tok-shared-1", http.StatusOK}} {
			if got := putMode(t, s, tc.auth); got != tc.want {
				t.Errorf("%s: PUT /admin/mode with Authorization %q = %d, want %d", name, tc.auth, got, tc.want)
			}
		}
	}},
	"workers": {value: "7", check: poolCapacity(map[string]string{
		"gateway": "shared", "orders": "shared", "catalog": "shared", "payments": "shared", "shipping": "shared"}, 7)},
	// Bulkheads are per route at the gateway and per dependency in
	// orders; the leaves have none.
	"bulkhead":          {value: "9", check: poolCapacity(map[string]string{"gateway": "checkout", "orders": "to.payments"}, 9)},
	"max-wait":          {value: "40ms"},
	"breaker-min-calls": {value: "10"},
	"breaker-window":    {value: "15s"},
	"breaker-ratio":     {value: "0.25"},
	"breaker-open":      {value: "5s"},
	"drain-timeout":     {value: "3s"},
	"db-max-conns":      {value: "6"},
	// Port 1 refuses at once: every service that keeps state stops at
	// start-up, the gateway (stateless) serves.
	"database-url": {value: "postgres://mercado:pw-1234@127.0.0.1:1/mercado?sslmode=disable", shows: "postgres://127.0.0.1:1/mercado",
		failAlone: []string{"orders", "catalog", "payments", "shipping"}, failure: "database"},
	"log-level": {value: "warn", quiet: true},

	// The gateway's edge.
	"budget":     {value: "900ms"},
	"max-budget": {value: "5s"},
	// The traffic classes' budgets.
	"background-budget":     {value: "20s", check: classBudget("background", "", 20*time.Second)},
	"background-max-budget": {value: "90s", shows: "1m30s", check: classBudget("background", "9999999999", 90*time.Second)},
	"batch-budget":          {value: "4m0s", check: classBudget("batch", "", 4*time.Minute)},
	"batch-max-budget":      {value: "20m0s", check: classBudget("batch", "9999999999", 20*time.Minute)},
	"orders-cap":            {value: "700ms"},
	"browse-cap":            {value: "250ms"},
	"max-body-bytes": {value: "2048", check: func(t *testing.T, name string, s running) {
		body := `{"customer":"` + strings.Repeat("a", 3000) + `"}`
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/api/checkout", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", `"flag-table"`)
		if got := do(t, req); got != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: a 3 kB checkout = %d, want 413", name, got)
		}
	}},

	// Orders' caps.
	"catalog-cap":  {value: "250ms"},
	"fraud-cap":    {value: "350ms"},
	"estimate-cap": {value: "120ms"},
	"payments-cap": {value: "600ms"},
	"shipping-cap": {value: "200ms"},
}

// refusedUnderAll are the flags of `serve <name>` that `serve all` refuses
// (exit 2), with a piece of the reason it gives.
var refusedUnderAll = map[string]struct{ value, reason string }{
	"addr":           {"127.0.0.1:0", "its own loopback port"},
	"admin-addr":     {"127.0.0.1:0", "its own loopback port"},
	"admin-insecure": {"true", "on loopback"},
	"fault":          {"latency=1ms", "--catalog-fault"},
	"orders-addr":    {"127.0.0.1:1", "connects its services"},
	"catalog-addr":   {"127.0.0.1:1", "connects its services"},
	"payments-addr":  {"127.0.0.1:1", "connects its services"},
	"shipping-addr":  {"127.0.0.1:1", "connects its services"},
	"admin-peers":    {"orders=http://127.0.0.1:1", "fans a mode switch out"},
	"network-admin":  {"http://127.0.0.1:1", "the shop's own wire"},
}

// TestServeAllHonoursEveryFlag runs each flag of `mercado serve <name>`
// through every service that lists it, running alone, and through `serve
// all`: each service must run with the same configuration either way
// (its configuration log line, the flag's value included) and show the
// same effect on its admin API — or, for the flags in refusedUnderAll,
// `serve all` must refuse the flag (and its environment variable) with
// exit 2 and the reason.
func TestServeAllHonoursEveryFlag(t *testing.T) {
	listing := map[string][]string{} // flag → the services that list it
	for _, name := range serviceNames {
		for _, f := range helpFlags(t, "serve", name) {
			listing[f] = append(listing[f], name)
		}
	}
	for _, flagName := range slices.Sorted(maps.Keys(flagCases)) {
		tc := flagCases[flagName]
		t.Run(flagName, func(t *testing.T) {
			arg := "--" + flagName + "=" + tc.value
			shows := tc.shows
			if shows == "" {
				shows = tc.value
			}
			all := startServe(t, tc, "all", arg)
			for _, name := range listing[flagName] {
				alone := startServe(t, tc, name, arg)
				if tc.quiet {
					continue
				}
				a, b := alone.services[name], all.services[name]
				if got := a.flags[flagName]; got != shows {
					t.Errorf("serve %s %s: the configuration shows %s=%q, want %q", name, arg, flagName, got, shows)
				}
				if diff := configDiff(a.flags, b.flags); diff != "" {
					t.Errorf("%s: serve %s %s and serve all %s run with different settings:\n%s", name, name, arg, arg, diff)
				}
				if tc.check != nil && alone.err == nil {
					tc.check(t, name, a)
				}
				if tc.check != nil && all.err == nil {
					tc.check(t, name, b)
				}
			}
		})
	}
	for _, flagName := range slices.Sorted(maps.Keys(refusedUnderAll)) {
		r := refusedUnderAll[flagName]
		t.Run(flagName+" is refused", func(t *testing.T) {
			for _, how := range []struct {
				args []string
				env  map[string]string
				name string
			}{
				{[]string{"serve", "all", "--" + flagName + "=" + r.value}, nil, "--" + flagName},
				{[]string{"serve", "all"}, map[string]string{envName(flagName): r.value}, envName(flagName)},
			} {
				var stderr strings.Builder
				err := run(context.Background(), how.args, env(how.env), io.Discard, &stderr)
				if code := exitCode(err, &stderr); code != 2 {
					t.Errorf("serve all with %s: exit %d, want 2 (err: %v)", how.name, code, err)
				}
				msg := stderr.String()
				if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, strings.TrimPrefix(how.name, "--")) || !strings.Contains(msg, r.reason) {
					t.Errorf("serve all with %s printed %q; want one line naming it, with the reason (%q)", how.name, msg, r.reason)
				}
			}
		})
	}
}

// serveAllFaults: `serve all` has no --fault, but a fault flag per service,
// which works as the service's own --fault does.
func TestServeAllFaultPerService(t *testing.T) {
	for _, name := range serviceNames {
		t.Run(name, func(t *testing.T) {
			tc := flagCase{value: "latency=1ms"}
			alone := startServe(t, tc, name, "--fault=latency=1ms")
			all := startServe(t, tc, "all", "--"+name+"-fault=latency=1ms")
			for _, other := range serviceNames {
				want := ""
				if other == name {
					want = "*:latency=1ms" // every method
				}
				if got := all.services[other].flags["fault"]; got != want {
					t.Errorf("serve all --%s-fault: %s's configuration shows fault=%q, want %q", name, other, got, want)
				}
			}
			if diff := configDiff(alone.services[name].flags, all.services[name].flags); diff != "" {
				t.Errorf("serve %s --fault and serve all --%s-fault run with different settings:\n%s", name, name, diff)
			}
			for _, s := range []running{alone.services[name], all.services[name]} {
				var v struct {
					Faults map[string]struct{ Latency string }
				}
				body := get(t, "http://"+s.admin+"/admin/faults")
				if err := json.Unmarshal([]byte(body), &v); err != nil || v.Faults["*"].Latency != "1ms" {
					t.Errorf("%s: GET /admin/faults = %s, want a 1ms latency for every method", name, body)
				}
			}
		})
	}
}

// With the admin token set once, the gateway of `serve all` switches the
// whole shop with it, and refuses to without it.
func TestServeAllTokenFansOut(t *testing.T) {
	all := startServe(t, flagCase{}, "all", "--admin-token=tok-shared-2")
	gw := all.services["gateway"]
	for _, tc := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer tok-shared-2", http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodPut, "http://"+gw.admin+"/admin/mode", strings.NewReader(`{"mode":"naive"}`))
		req.Header.Set("Content-Type", "application/json")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		if got := do(t, req); got != tc.want {
			t.Errorf("PUT /admin/mode on the gateway with %q = %d, want %d", tc.auth, got, tc.want)
		}
	}
	for _, name := range serviceNames {
		if got := adminMode(t, all.services[name])["mode"]; got != "naive" {
			t.Errorf("%s is in mode %v after the gateway's switch, want naive", name, got)
		}
	}
}

// TestServeFlagTablesAreComplete: every flag any `serve <name> --help`
// lists is in flagCases or in refusedUnderAll, and `serve all --help`
// lists exactly those and its own (its faults per service, free ports),
// each refused one marked as such.
func TestServeFlagTablesAreComplete(t *testing.T) {
	listed := map[string]bool{}
	for _, name := range serviceNames {
		for _, f := range helpFlags(t, "serve", name) {
			listed[f] = true
		}
	}
	for f := range listed {
		_, tested := flagCases[f]
		_, refused := refusedUnderAll[f]
		if tested == refused {
			t.Errorf("--%s: a flag of serve <name> must be in exactly one of flagCases and refusedUnderAll (flagCases %t, refused %t)", f, tested, refused)
		}
	}
	for f := range flagCases {
		if !listed[f] {
			t.Errorf("flagCases has --%s, which no serve <name> lists", f)
		}
	}
	for f := range refusedUnderAll {
		if !listed[f] {
			t.Errorf("refusedUnderAll has --%s, which no serve <name> lists", f)
		}
	}

	allOnly := map[string]bool{"ephemeral-ports": true, "network-proxy": true} // every serve all above runs with the first; TestServeAllNetworkProxy, the second
	for _, name := range serviceNames {
		allOnly[name+"-fault"] = true // TestServeAllFaultPerService
	}
	help := helpText(t, "serve", "all")
	allFlags := helpFlags(t, "serve", "all")
	for _, f := range allFlags {
		if !listed[f] && !allOnly[f] {
			t.Errorf("serve all lists --%s, which neither a service lists nor the tests know", f)
		}
	}
	for f := range listed {
		if !slices.Contains(allFlags, f) {
			t.Errorf("serve all does not list --%s (a flag of serve <name>): it must take it, or refuse it with a reason", f)
		}
	}
	for f := range refusedUnderAll {
		if !regexp.MustCompile(`(?m)^  -` + f + `\b.*\n\s+not for serve all: `).MatchString(help) {
			t.Errorf("serve all --help does not say --%s is not for it", f)
		}
	}
}

// A mistake in `serve all`'s configuration is one line, printed once,
// naming the flag: not once per service, not followed by the usage.
func TestServeMistakesArePrintedOnce(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "all", "--floor", "2m"}, "mercado: serve all: floor: 2m0s is outside 0 to 1m\n"},
		{[]string{"serve", "all", "--workers", "-1"}, "mercado: serve all: workers: -1 is outside 1 to 100000\n"},
		{[]string{"serve", "all", "--bulkhead", "0"}, "mercado: serve all: bulkhead: 0 is outside 1 to 100000\n"},
		{[]string{"serve", "catalog", "--workers", "0"}, "mercado: serve catalog: workers: 0 is outside 1 to 100000\n"},
		{[]string{"serve", "all", "--db-max-conns", "-3"}, "mercado: serve all: db-max-conns: -3 is outside 1 to 1000\n"},
		{[]string{"serve", "all", "--floor", "abc"}, `mercado: serve all: --floor "abc": want a duration such as 800ms or 2s` + "\n"},
		{[]string{"serve", "all", "--floor", "1.5s"},
			"mercado: serve all: gateway: floor: 1.5s is not below budget 1.2s: every request without X-Deadline-Ms would be turned away\n"},
		{[]string{"serve", "gateway", "--budget", "100ms", "--margin", "90ms"},
			"mercado: serve gateway: margin: 90ms plus floor 20ms is not below budget 100ms: no request without X-Deadline-Ms would get a call made\n"},
		{[]string{"serve", "all", "--budget", "15ms"},
			"mercado: serve all: gateway: floor: 20ms is not below budget 15ms: every request without X-Deadline-Ms would be turned away\n"},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			var stderr strings.Builder
			err := run(context.Background(), tc.args, env(nil), io.Discard, &stderr)
			if code := exitCode(err, &stderr); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if stderr.String() != tc.want {
				t.Errorf("printed %q, want %q", stderr.String(), tc.want)
			}
		})
	}
}

// A service running alone keeps its admin API on loopback, and refuses
// one other machines can reach unless it has a token or is told.
func TestServeAdminBeyondLoopback(t *testing.T) {
	var stderr strings.Builder
	err := run(context.Background(), []string{"serve", "payments", "--addr", "127.0.0.1:0", "--admin-addr", ":0"}, env(nil), io.Discard, &stderr)
	if code := exitCode(err, &stderr); code != 2 {
		t.Errorf("admin on every interface without a token: exit %d, want 2", code)
	}
	if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "admin-addr") || !strings.Contains(msg, "--admin-insecure") {
		t.Errorf("printed %q, want one line naming admin-addr and the way out", msg)
	}
	for _, extra := range [][]string{{"--admin-token", "tok-3"}, {"--admin-insecure"}} {
		s := startServe(t, flagCase{}, "payments", append([]string{"--admin-addr=:0"}, extra...)...)
		if s.err != nil {
			t.Errorf("admin on every interface with %v: %v", extra, s.err)
		}
	}
	for _, name := range serviceNames {
		if got := helpDefault(t, name, "admin-addr"); !strings.HasPrefix(got, "127.0.0.1:") {
			t.Errorf("serve %s: --admin-addr defaults to %q, want a loopback address", name, got)
		}
	}
}

// running is one service of a run.
type running struct {
	addr, admin string
	// flags is its configuration log line.
	flags map[string]string
}

// serveRun is one `mercado serve` started through run().
type serveRun struct {
	services map[string]running
	// err is what run returned, if it stopped on its own.
	err error
}

// startServe runs `mercado serve name args...` on free ports until the
// test ends, and returns once every service it starts serves (or the run
// failed as tc expects).
func startServe(t *testing.T, tc flagCase, name string, args ...string) serveRun {
	t.Helper()
	cmd := []string{"serve", name}
	want := 1
	switch name {
	case "all":
		// serve all logs its configurations at debug (a later
		// --log-level in args wins).
		cmd, want = append(cmd, "--ephemeral-ports", "--log-level=debug"), len(serviceNames)
	case "gateway":
		cmd = append(cmd, "--orders-addr=127.0.0.1:1", "--catalog-addr=127.0.0.1:1", "--admin-peers=")
	case "orders":
		cmd = append(cmd, "--catalog-addr=127.0.0.1:1", "--payments-addr=127.0.0.1:1", "--shipping-addr=127.0.0.1:1")
	}
	if name != "all" && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--admin-addr") }) {
		cmd = append(cmd, "--addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0")
	} else if name != "all" {
		cmd = append(cmd, "--addr=127.0.0.1:0")
	}
	cmd = append(cmd, args...)
	mustFail := name == "all" && len(tc.failAlone) > 0 || slices.Contains(tc.failAlone, name)

	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, cmd, env(nil), io.Discard, logs) }()
	stopped := false
	t.Cleanup(func() {
		cancel()
		if !stopped {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%v stopped with %v", cmd, err)
				}
			case <-time.After(15 * time.Second):
				t.Errorf("%v did not stop", cmd)
			}
		}
	})

	var res serveRun
	deadline := time.After(15 * time.Second)
	if tc.quiet {
		deadline = time.After(500 * time.Millisecond)
	}
wait:
	for {
		res.services = parseRun(logs.String())
		if n := countServing(logs.String()); n == want && !tc.quiet {
			break
		}
		select {
		case res.err = <-done:
			stopped = true
			break wait
		case <-deadline:
			if tc.quiet {
				break wait
			}
			t.Fatalf("%v: %d of %d services serving after 15 s; logs:\n%s", cmd, countServing(logs.String()), want, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	res.services = parseRun(logs.String())
	switch {
	case mustFail:
		var usage usageError
		if res.err == nil || errors.As(res.err, &usage) || !strings.Contains(res.err.Error(), tc.failure) {
			t.Errorf("%v = %v, want it to stop at start-up with a runtime error about the %s", cmd, res.err, tc.failure)
		}
	case res.err != nil:
		t.Fatalf("%v stopped: %v; logs:\n%s", cmd, res.err, logs.String())
	case tc.quiet && logs.String() != "":
		t.Errorf("%v logged, want nothing below warn:\n%s", cmd, logs.String())
	}
	return res
}

func countServing(logs string) int { return strings.Count(logs, `"msg":"serving"`) }

// parseRun reads the configuration and serving lines of a run's log.
func parseRun(logs string) map[string]running {
	out := map[string]running{}
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Msg       string            `json:"msg"`
			Service   string            `json:"service"`
			Flags     map[string]string `json:"flags"`
			Addr      string            `json:"addr"`
			AdminAddr string            `json:"admin_addr"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		s := out[line.Service]
		switch line.Msg {
		case "configuration":
			s.flags = line.Flags
		case "serving":
			s.addr, s.admin = line.Addr, line.AdminAddr
		}
		out[line.Service] = s
	}
	return out
}

// configDiff lists the settings alone and all disagree on, leaving out
// the addresses, which `serve all` sets itself.
func configDiff(alone, all map[string]string) string {
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(alone)) {
		if k == "addr" || strings.HasSuffix(k, "-addr") || k == "admin-peers" {
			continue
		}
		if v, ok := all[k]; !ok || v != alone[k] {
			diff = append(diff, fmt.Sprintf("  %s: alone %q, in serve all %q", k, alone[k], all[k]))
		}
	}
	return strings.Join(diff, "\n")
}

// helpText is the usage `mercado args... --help` prints.
func helpText(t *testing.T, args ...string) string {
	t.Helper()
	var stderr strings.Builder
	if err := run(context.Background(), append(args, "--help"), env(nil), io.Discard, &stderr); err != nil {
		t.Fatalf("mercado %v --help: %v", args, err)
	}
	return stderr.String()
}

// helpFlags are the flags `mercado args... --help` lists.
func helpFlags(t *testing.T, args ...string) []string {
	t.Helper()
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(helpText(t, args...), -1) {
		flags = append(flags, m[1])
	}
	if len(flags) == 0 {
		t.Fatalf("mercado %v --help lists no flags", args)
	}
	return flags
}

// helpDefault is the default `serve name --help` shows for flag.
func helpDefault(t *testing.T, name, flag string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  -` + flag + ` .*\n.*\(default "([^"]*)"\)`).FindStringSubmatch(helpText(t, "serve", name))
	if m == nil {
		t.Fatalf("serve %s --help shows no default for --%s", name, flag)
	}
	return m[1]
}

func envName(flag string) string {
	return "MERCADO_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// modeShows checks one field of GET /admin/mode.
func modeShows(field string, want any) func(*testing.T, string, running) {
	return func(t *testing.T, name string, s running) {
		if got := adminMode(t, s)[field]; got != want {
			t.Errorf("%s: GET /admin/mode shows %s %v, want %v", name, field, got, want)
		}
	}
}

// poolCapacity checks mercado_pool_capacity of each service's named pool.
func poolCapacity(pools map[string]string, want int) func(*testing.T, string, running) {
	return func(t *testing.T, name string, s running) {
		pool, ok := pools[name]
		if !ok {
			return
		}
		re := regexp.MustCompile(`(?m)^mercado_pool_capacity\{[^}]*pool="` + regexp.QuoteMeta(pool) + `"[^}]*\} (\d+)$`)
		m := re.FindStringSubmatch(get(t, "http://"+s.admin+"/metrics"))
		if m == nil || m[1] != fmt.Sprint(want) {
			t.Errorf("%s: pool %q has capacity %v in /metrics, want %d", name, pool, m, want)
		}
	}
}

func adminMode(t *testing.T, s running) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(get(t, "http://"+s.admin+"/admin/mode")), &v); err != nil {
		t.Fatalf("GET /admin/mode: %v", err)
	}
	return v
}

// putMode switches one service to budgeted (its own admin API alone) and
// returns the status.
func putMode(t *testing.T, s running, auth string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, "http://"+s.admin+"/admin/mode?scope=self", strings.NewReader(`{"mode":"budgeted"}`))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return do(t, req)
}

// classBudget checks the budget a checkout of class gets at the gateway,
// sent with X-Deadline-Ms ms ("": none): the timeout of its call to
// orders (which has no cap of its own), from Server-Timing, is want, less
// the time the request took to get there. Whether orders answers does
// not matter: the call's timeout is reported either way.
func classBudget(class, ms string, want time.Duration) func(t *testing.T, name string, s running) {
	return func(t *testing.T, name string, s running) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/api/checkout",
			strings.NewReader(`{"customer":"ana","items":[{"sku":"tea-sencha","qty":1}],"address":"1 Main St"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", `"class-budget-`+class+ms+`"`)
		req.Header.Set("X-Request-Class", class)
		if ms != "" {
			req.Header.Set("X-Deadline-Ms", ms)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: checkout: %v", name, err)
		}
		resp.Body.Close()
		hops, err := timing.Parse(resp.Header.Get("Server-Timing"))
		if err != nil || len(hops) == 0 || hops[0].Name != "orders" {
			t.Fatalf("%s: Server-Timing %q (%v): want the orders hop first", name, resp.Header.Get("Server-Timing"), err)
		}
		if got := hops[0].Timeout; got > want || got < want-5*time.Second {
			t.Errorf("%s: a %s checkout (X-Deadline-Ms %q) called orders with a %v timeout, want %v", name, class, ms, got, want)
		}
	}
}

func do(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b)
}

// serve all says at start where the shop and its console are, not the
// five services' configurations: those are behind --log-level debug.
func TestServeAllPrintsItsURLs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "all", "--ephemeral-ports"}, env(nil), io.Discard, logs) }()
	defer func() {
		cancel()
		<-done
	}()
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(logs.String(), "Its console:"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no URLs after 15 s; logs:\n%s", logs.String())
		}
	}
	got := logs.String()
	for _, re := range []string{`Mercado's shop:  http://127\.0\.0\.1:\d+\n`, `Its console:     http://127\.0\.0\.1:\d+/console/\n`} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("serve all printed no line matching %s:\n%s", re, got)
		}
	}
	if strings.Contains(got, `"msg":"configuration"`) {
		t.Errorf("serve all logged its configurations at the info level:\n%s", got)
	}
}

// `mercado mode` with no mode named shows every service's, through the
// gateway and its peers; after a switch, all five show the new one.
func TestModeShowsEveryService(t *testing.T) {
	all := startServe(t, flagCase{}, "all")
	adminURL := "http://" + all.services["gateway"].admin
	for _, want := range []string{"budgeted", "naive"} {
		if want == "naive" {
			if err := run(context.Background(), []string{"mode", "naive", "--admin", adminURL}, env(nil), io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		if err := run(context.Background(), []string{"mode", "--admin", adminURL}, env(nil), &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		for _, name := range serviceNames {
			if !regexp.MustCompile(`(?m)^` + name + ` +` + want + ` `).MatchString(out.String()) {
				t.Errorf("mercado mode shows no line for %s in %s:\n%s", name, want, out.String())
			}
		}
	}
}
