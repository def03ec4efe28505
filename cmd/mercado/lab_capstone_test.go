package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/internal/slowtest"
	"github.com/mercado-lab/mercado/lab"
	"github.com/mercado-lab/mercado/loadtest"
)

// TestCapstoneGeneratorApart runs a short capstone with each stage's load
// sent from the real `lab load-generator` process (this test binary,
// started again; TestMain). The generator reads stage 0's warm-up for the
// suggest step, and asks for the stop of the one stage without read
// caps: the lab stops that shop, and the stage still ends with its
// figures — the generator answers the run's last counters with those it
// read before the stop, since the stopped shop answers nothing.
func TestCapstoneGeneratorApart(t *testing.T) {
	slowtest.Require(t, "a capstone through the generator process, about 20 s")
	gen := stageGeneratorApart(io.Discard)
	if gen == nil {
		t.Skip("this program cannot find its own executable")
	}
	cfg := lab.DefaultCapstone()
	cfg.CheckoutRate, cfg.BrowseRate = 20, 5
	cfg.WarmUp, cfg.Fault = 2*time.Second, 2*time.Second
	cfg.Deadline, cfg.Patience = 500*time.Millisecond, time.Second
	cfg.Carrier = "CreateShipment:hang=3s"
	cfg.StallFor = time.Second
	cfg.Workers, cfg.BreakerOpen = 40, time.Second

	// What each stage's generator was asked, got back, and whether its
	// shop was stopped (and answered nothing after).
	type stageSeen struct {
		hooks         lab.StageHooks
		load          lab.StageLoad
		stops         int
		answeredAfter bool
	}
	var (
		mu   sync.Mutex
		seen []*stageSeen
	)
	watched := func(ctx context.Context, sc loadtest.Scenario, shop lab.Target, hooks lab.StageHooks, stopShop func(), progress func(string, time.Duration, time.Duration)) (lab.StageLoad, error) {
		st := &stageSeen{hooks: hooks}
		mu.Lock()
		seen = append(seen, st)
		mu.Unlock()
		stop := func() {
			stopShop()
			resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(shop.Gateway + "/api/products")
			mu.Lock()
			defer mu.Unlock()
			st.stops++
			if err == nil {
				resp.Body.Close()
				st.answeredAfter = true
			}
		}
		out, err := gen(ctx, sc, shop, hooks, stop, progress)
		st.load = out
		return out, err
	}
	var stages []string
	progress := func(stage string, _, _ time.Duration) {
		if len(stages) == 0 || stages[len(stages)-1] != stage {
			stages = append(stages, stage)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := lab.CapstoneApart(ctx, cfg, slog.New(slog.DiscardHandler), progress, watched)
	if err != nil {
		t.Fatal(err)
	}

	if got := strings.Join(stages, ","); got != "0 fragile,1 +timeouts,2 +budget,3 +isolation" {
		t.Errorf("progress from the generator's process reported stages %s", got)
	}
	if len(seen) != 4 || len(res.Stages) != 4 {
		t.Fatalf("%d stages sent to a generator, %d reported; want 4", len(seen), len(res.Stages))
	}
	for i, st := range seen {
		wantStop := i == 0 // only stage 0 has no read caps
		if got := st.hooks.StopAfter > 0; got != wantStop {
			t.Errorf("stage %s: asked to stop its shop %v (after %v), want %v", res.Stages[i].Stage, got, st.hooks.StopAfter, wantStop)
		}
		if want := map[bool]int{true: 1, false: 0}[wantStop]; st.stops != want {
			t.Errorf("stage %s: the generator asked for %d stops of the shop, want %d", res.Stages[i].Stage, st.stops, want)
		}
	}
	fragile := seen[0]
	if fragile.answeredAfter {
		t.Error("stage 0's shop still answered after the stop the generator asked for")
	}
	if calls := res.Run.Modes[0].Server.Calls["shipping"]; calls == 0 {
		t.Errorf("stage 0's figures count no call to shipping (%v): its last counters were not the ones read before the stop", res.Run.Modes[0].Server.Calls)
	}
	if !res.Stages[0].StoppedAtEnd {
		t.Error("stage 0 is not reported as stopped at its end")
	}

	// The warm-up's hops came back from the generator's process, and the
	// suggest step read them.
	if start, end := hopCalls(fragile.load.WarmStart), hopCalls(fragile.load.WarmEnd); len(fragile.load.WarmEnd.Calls) == 0 || end <= start {
		t.Errorf("stage 0's warm-up hops: %d calls at its start, %d at its end; want more at the end", start, end)
	}
	i := slices.IndexFunc(res.Suggestion.Hops, func(h budget.HopSuggestion) bool { return h.From == "orders" && h.To == "shipping" })
	if i < 0 || res.Suggestion.Hops[i].Samples == 0 || res.Suggestion.Hops[i].Cap == 0 {
		t.Errorf("no suggested cap for orders → shipping from the warm-up: %+v", res.Suggestion.Hops)
	}

	// The CPU figure is the shop's process's, read from /proc by the
	// generator.
	if processCPU(os.Getpid()) != nil {
		if last := res.Run.Modes[3]; last.Server.CPUSecondsPerGoodCheckout <= 0 {
			t.Errorf("stage 3 reports %v CPU seconds per good checkout (%.1f good checkouts/s)", last.Server.CPUSecondsPerGoodCheckout, res.Stages[3].CheckoutGoodputPerS)
		}
	}
}

// hopCalls is how many calls the hop readings h counted, all hops together.
func hopCalls(h budget.Hops) uint64 {
	var n uint64
	for _, c := range h.Calls {
		n += c.Durations.GetSampleCount()
	}
	return n
}
