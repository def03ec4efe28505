package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/lab/console"
	"github.com/mercado-lab/mercado/lab/shop"
)

// The traffic-classes preset runs its lesson on the shop the console
// serves, whose pools started at 200: it sizes them at the scenario's 50,
// the mode buttons keep that size, and the reset puts 200 back. Naive
// shoppers wait behind the exports in the shared pools; budgeted's are
// served beside them.
func TestClassesPresetSizesThePoolsAndShowsTheLesson(t *testing.T) {
	_, base := startShop(t, shop.EphemeralConfig())
	workers := func(res console.State) map[string]int {
		out := map[string]int{}
		for _, svc := range res.Services {
			if svc.Mode != nil {
				out[svc.Name] = svc.Mode.Workers
			}
		}
		return out
	}
	want := func(when string, st console.State, n int) {
		t.Helper()
		got := workers(st)
		if len(got) != 5 {
			t.Fatalf("%s: %d services answered, want 5: %v", when, len(got), got)
		}
		for name, w := range got {
			if w != n {
				t.Errorf("%s: %s has pools of %d, want %d", when, name, w, n)
			}
		}
	}
	want("at start", state(t, base), 200)

	res, err := console.ApplyPreset(context.Background(), base, "", "classes")
	if err != nil {
		t.Fatal(err)
	}
	want("after the classes preset", res.State, 50)
	if g := res.State.Services[0].Mode; g.Mode != mode.Naive || res.State.Traffic.Export == 0 {
		t.Fatalf("the classes preset put the gateway in %s with %v exports/s; want naive, with exports", g.Mode, res.State.Traffic.Export)
	}
	checkouts := goodShare(t, base, 30*time.Second, func(good float64) bool { return good < 0.5 })
	if checkouts >= 0.5 {
		t.Errorf("naive, exports in the shared pools: %.0f%% of a second's checkouts good; want under half", 100*checkouts)
	}

	if status, _, body := call(t, http.MethodPut, base+"api/mode", "", "application/json", `{"mode":"budgeted"}`); status != http.StatusOK {
		t.Fatalf("PUT api/mode = %d %s", status, body)
	}
	want("after the mode button", state(t, base), 50)
	checkouts = goodShare(t, base, time.Minute, func(good float64) bool { return good >= 0.9 })
	if checkouts < 0.9 {
		t.Errorf("budgeted, exports held to their share: at best %.0f%% of a second's checkouts good; want 90%% or more", 100*checkouts)
	}

	res, err = console.ApplyPreset(context.Background(), base, "", "healthy")
	if err != nil {
		t.Fatal(err)
	}
	want("after the reset", res.State, 200)
}

// goodShare reads the console's ticks for up to limit and returns the
// share of good checkouts of the first whole second since the call for
// which done holds, or of the last one read.
func goodShare(t *testing.T, base string, limit time.Duration, done func(float64) bool) float64 {
	t.Helper()
	since := time.Now().UnixMilli()
	_, r := events(t, base, limit+5*time.Second)
	share := -1.0
	for end := time.Now().Add(limit); time.Now().Before(end); {
		name, data := readEvent(t, r)
		if name != "tick" {
			continue
		}
		var tick console.TickEvent
		if err := json.Unmarshal([]byte(data), &tick); err != nil {
			t.Fatal(err)
		}
		pts := tick.Classes["checkout"]
		// The newest point may still be filling; the one before is whole.
		if len(pts) < 2 || pts[len(pts)-2].T < since || pts[len(pts)-2].Sent == 0 {
			continue
		}
		p := pts[len(pts)-2]
		if share = float64(p.Good) / float64(p.Sent); done(share) {
			return share
		}
	}
	return share
}
