package budget

import (
	"math"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// hist is a hop histogram of n calls, the slowest 2% of them between
// 0.15 and 0.25 s and the rest under 0.15 s: its p99 is (about) 200 ms.
func hist(n uint64) *dto.Histogram {
	inf := math.Inf(+1)
	slow := n / 50
	return histogram([]float64{0.15, 0.25, inf}, []uint64{n - slow, n, n})
}

// A checkout as orders makes it: the reservation and the fraud screen at
// once, then the charge, then the booking beside the optional estimate;
// the gateway's one call to orders above it.
func checkout(n uint64) []HopObservation {
	call := func(from, to, callee, setting string, stage int, parallel bool, crit string, h *dto.Histogram) HopObservation {
		route := "Checkout"
		return HopObservation{From: from, To: to, Callee: callee, Setting: setting, Cap: 300 * time.Millisecond,
			Floor: 20 * time.Millisecond, Criticality: crit, Stage: stage, Parallel: parallel, Route: route, Method: route, Durations: h}
	}
	fast := histogram([]float64{0.001, 0.0025, math.Inf(+1)}, []uint64{0, n, n}) // p99 under 2.5 ms
	return []HopObservation{
		call("gateway", "orders", "orders", "--orders-cap", 1, false, "critical", hist(n)),
		call("orders", "catalog", "catalog", "--catalog-cap", 1, true, "critical", hist(n)),
		call("orders", "fraud", "payments", "--fraud-cap", 1, true, "critical", fast),
		call("orders", "payments", "payments", "--payments-cap", 2, false, "critical", hist(n)),
		call("orders", "shipping", "shipping", "--shipping-cap", 3, false, "critical", hist(n)),
		call("orders", "estimate", "shipping", "--estimate-cap", 4, false, "optional", nil),
	}
}

func TestSuggestCaps(t *testing.T) {
	s := Suggest(checkout(1204), SuggestOptions{Margin: DefaultMargin, Budget: 1200 * time.Millisecond})
	byTo := map[string]HopSuggestion{}
	for _, h := range s.Hops {
		byTo[h.To] = h
	}
	for _, tc := range []struct {
		to  string
		cap time.Duration
		why string
	}{
		// 200 ms + 20% = 240 ms, on a 10 ms step.
		{"catalog", 240 * time.Millisecond, "orders → catalog: p99 200 ms over 1,204 calls + 20% = 240 ms"},
		// 2.5 ms and its 20% round up to 5 ms: below orders' floor.
		{"fraud", 20 * time.Millisecond, "raised to the floor at orders, 20 ms"},
		{"estimate", 0, "orders → estimate: no calls yet; --estimate-cap stays 300ms"},
	} {
		h := byTo[tc.to]
		if h.Cap != tc.cap || !strings.Contains(h.Why, tc.why) {
			t.Errorf("%s: cap %v, %q; want %v, %q", tc.to, h.Cap, h.Why, tc.cap, tc.why)
		}
	}
	if byTo["catalog"].Samples != 1204 {
		t.Errorf("catalog samples %d", byTo["catalog"].Samples)
	}
	// orders holds no more than the gateway's cap on it, 720 ms.
	if s.ConnectTimeout != 180*time.Millisecond || !strings.Contains(s.ConnectWhy, "a quarter of the shortest budget a calling service holds (orders, by gateway --orders-cap: 720 ms)") {
		t.Errorf("connect %v: %s", s.ConnectTimeout, s.ConnectWhy)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %q", s.Warnings)
	}
	// catalog ‖ fraud, then payments, then shipping: 240 + 240 + 240;
	// the gateway's cap on orders is raised to it.
	if byTo["orders"].Cap != 720*time.Millisecond || !strings.Contains(byTo["orders"].Why, "raised to 720 ms, what the calls orders makes can take") {
		t.Errorf("gateway → orders: %v, %s", byTo["orders"].Cap, byTo["orders"].Why)
	}
	if len(s.Paths) != 1 || s.Paths[0].Route != "gateway Checkout" || s.Paths[0].Worst != 720*time.Millisecond || !s.Paths[0].Fits {
		t.Errorf("paths %+v", s.Paths)
	}
	want := []string{
		"mercado serve gateway --orders-cap=720ms --connect-timeout=180ms",
		"mercado serve orders --catalog-cap=240ms --fraud-cap=20ms --payments-cap=240ms --shipping-cap=240ms --connect-timeout=180ms",
		"mercado serve all --orders-cap=720ms --catalog-cap=240ms --fraud-cap=20ms --payments-cap=240ms --shipping-cap=240ms --connect-timeout=180ms",
	}
	if strings.Join(s.Flags, "\n") != strings.Join(want, "\n") {
		t.Errorf("flags:\n%s\nwant:\n%s", strings.Join(s.Flags, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(s.Env, " ") != "MERCADO_ORDERS_CAP=720ms MERCADO_CATALOG_CAP=240ms MERCADO_FRAUD_CAP=20ms MERCADO_PAYMENTS_CAP=240ms MERCADO_SHIPPING_CAP=240ms MERCADO_CONNECT_TIMEOUT=180ms" {
		t.Errorf("env %q", s.Env)
	}
}

func TestSuggestWarns(t *testing.T) {
	t.Run("too few calls", func(t *testing.T) {
		s := Suggest(checkout(50), SuggestOptions{Margin: DefaultMargin})
		if len(s.Warnings) != 5 || !strings.Contains(s.Warnings[0], "gateway → orders: a p99 over 50 calls is no better than the slowest call or two; send at least 100") {
			t.Errorf("warnings %q", s.Warnings)
		}
		if s.ConnectTimeout != 0 || s.Paths != nil {
			t.Errorf("no budget, yet connect %v, paths %v", s.ConnectTimeout, s.Paths)
		}
	})
	t.Run("ran into the cap", func(t *testing.T) {
		obs := checkout(1000)
		obs[3].TimedOut = 50
		s := Suggest(obs, SuggestOptions{Margin: DefaultMargin})
		if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "orders → payments: 5.0% of the calls ran into the cap in force (300 ms)") {
			t.Errorf("warnings %q", s.Warnings)
		}
	})
	t.Run("does not fit the budget", func(t *testing.T) {
		s := Suggest(checkout(1000), SuggestOptions{Margin: DefaultMargin, Budget: 500 * time.Millisecond})
		if len(s.Paths) != 1 || s.Paths[0].Fits || len(s.Warnings) != 1 ||
			!strings.Contains(s.Warnings[0], "gateway Checkout: the suggested caps along the critical path add up to 720 ms, more than the 500 ms edge budget") ||
			!strings.Contains(s.Warnings[0], "mercado budget plan") {
			t.Errorf("paths %+v, warnings %q", s.Paths, s.Warnings)
		}
		if s.ConnectTimeout != 120*time.Millisecond {
			t.Errorf("connect %v, want a quarter of 500 ms, rounded down", s.ConnectTimeout)
		}
	})
}

func TestSuggestMargin(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration // the cap over catalog's 200 ms p99
		err  string
	}{
		{"20%", 240 * time.Millisecond, ""},
		{"0%", 200 * time.Millisecond, ""},
		{"30ms", 230 * time.Millisecond, ""},
		{"12.5%", 230 * time.Millisecond, ""},
		{"-5%", 0, "want a share from 0% to 1000%"},
		{"lots", 0, `"lots": want a share such as 20%, or a duration such as 30ms`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			m, err := ParseMargin(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := Suggest(checkout(1000), SuggestOptions{Margin: m})
			if s.Hops[1].Cap != tc.want {
				t.Errorf("cap %v, want %v", s.Hops[1].Cap, tc.want)
			}
		})
	}
}

func TestRounding(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		time.Millisecond:        5 * time.Millisecond,
		41 * time.Millisecond:   45 * time.Millisecond,
		254 * time.Millisecond:  260 * time.Millisecond,
		260 * time.Millisecond:  260 * time.Millisecond,
		1234 * time.Millisecond: 1300 * time.Millisecond,
	} {
		if got := roundUp(in); got != want {
			t.Errorf("roundUp(%v) = %v, want %v", in, got, want)
		}
	}
}
