package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/lab/shop"
)

// `mercado budget suggest --from` reads a running shop's hop histograms
// and contracts and proposes caps over the p99s it measured, with the
// flags to paste; those flags pass `mercado budget check`.
func TestBudgetSuggestFromAShop(t *testing.T) {
	ctx := context.Background()
	cfg := shop.EphemeralConfig()
	cfg.Catalog.Faults = faults.Set{"ReserveStock": {Latency: 30 * time.Millisecond}}
	s, err := shop.Start(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	admin := "http://" + s.Gateway.AdminAddr
	suggest := func(args ...string) (string, string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		err := run(ctx, append([]string{"budget", "suggest", "--from", admin}, args...), env(nil), &out, &errb)
		code := exitCode(err, &errb)
		return out.String(), errb.String(), code
	}

	// No traffic yet: say to send some.
	if _, stderr, code := suggest(); code != 1 || !strings.Contains(stderr, "the shop has made no call yet: send it some checkouts first") {
		t.Errorf("before any traffic: exit %d, %s", code, stderr)
	}

	const n = 20
	checkouts(t, s.GatewayURL(), "suggest", n)

	out, stderr, code := suggest()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"margin 20% over each p99, edge budget 1200 ms",
		fmt.Sprintf("orders → catalog: p99 "),
		fmt.Sprintf(" over %d calls + 20%% = ", n),
		"connect: a quarter of the shortest budget a calling service holds (orders, by gateway --orders-cap: ",
		"gateway Checkout: ",
		fmt.Sprintf("orders → catalog: a p99 over %d calls is no better than the slowest call or two", n),
		"mercado serve orders --catalog-cap=",
		"mercado serve all --orders-cap=",
		"MERCADO_CATALOG_CAP=",
		"MERCADO_CONNECT_TIMEOUT=",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, stderr, code = suggest("--json", "--margin", "10ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Hops []struct {
			From, To string
			P99MS    float64 `json:"p99_ms"`
			Samples  uint64
			CapMS    float64 `json:"cap_ms"`
		}
		ConnectTimeoutMS float64 `json:"connect_timeout_ms"`
		Flags            []string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	var catalog bool
	for _, h := range got.Hops {
		if h.From != "orders" || h.To != "catalog" {
			continue
		}
		catalog = true
		// 30 ms of simulated work lands in the (25 ms, 50 ms] bucket; a
		// busy machine (the race detector on, other builds) may push the
		// slowest of 20 calls several buckets up, so only a p99 below the
		// work or far past it fails. The cap is the p99 plus 10 ms,
		// rounded up to 5 ms.
		if h.Samples != n || h.P99MS < 30 || h.P99MS > 1000 || h.CapMS < h.P99MS+10 || h.CapMS > h.P99MS+15 {
			t.Errorf("orders → catalog: %+v", h)
		}
	}
	// A quarter of what orders holds: the gateway's cap on it, at least
	// what orders' calls can take, with every call in about 50 ms.
	if !catalog || got.ConnectTimeoutMS < 10 || got.ConnectTimeoutMS > 300 {
		t.Errorf("no orders → catalog, or connect %v ms:\n%s", got.ConnectTimeoutMS, out)
	}

	// The serve all line's flags, as `serve all` takes them, pass the
	// guardrails `budget check` keeps.
	var all []string
	for _, f := range got.Flags {
		if rest, ok := strings.CutPrefix(f, "mercado serve all "); ok {
			all = strings.Fields(rest)
		}
	}
	if !regexp.MustCompile(`^--[a-z-]+=\d+ms$`).MatchString(all[0]) {
		t.Fatalf("serve all flags %q", all)
	}
	var chk, chkErr bytes.Buffer
	err = run(ctx, append([]string{"budget", "check"}, all...), env(nil), &chk, &chkErr)
	if code := exitCode(err, &chkErr); code != 0 {
		t.Errorf("budget check %s: exit %d:\n%s%s", strings.Join(all, " "), code, chk.String(), chkErr.String())
	}
}

func TestBudgetSuggestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"nothing answers", []string{"--from", "http://127.0.0.1:1"}, 1,
			"budget suggest: nothing answers at http://127.0.0.1:1: start a shop (mercado serve all, or docker compose up)"},
		{"no --from", nil, 2, "budget suggest: --from: give a running shop's gateway admin URL"},
		{"bad margin", []string{"--from", "http://127.0.0.1:1", "--margin", "lots"}, 2,
			`budget suggest: --margin "lots": want a share such as 20%, or a duration such as 30ms`},
		{"no samples", []string{"--from", "http://127.0.0.1:1", "--min-samples", "0"}, 2, "--min-samples: must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errb bytes.Buffer
			err := run(context.Background(), append([]string{"budget", "suggest"}, tc.args...), env(map[string]string{"MERCADO_MARGIN": "3ms"}), new(bytes.Buffer), &errb)
			if code := exitCode(err, &errb); code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, %s; want %d, %q", code, errb.String(), tc.code, tc.want)
			}
		})
	}
}
