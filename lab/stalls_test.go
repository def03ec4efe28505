package lab

import (
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/stall"
)

// TestStallsThatDecideATry: a try is measured again only when its outcome
// is one that only a stall explains — a call that timed out though its
// work ends well within its timeout, or an answer late (or without orders'
// report) although it had a margin to spare — and it says how long a stall
// the watch saw. The lesson's own outcomes are never taken for stalls.
func TestStallsThatDecideATry(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name          string
		work, timeout time.Duration
		outcome       string
		wantHop       bool
	}{
		{"degraded shipping times out", 5 * time.Second, 150 * ms, "timeout", false},
		{"clipped payments times out", 780 * ms, 742 * ms, "timeout", false},
		{"work at its cap", 300 * ms, 300 * ms, "timeout", false},
		{"catalog well within its cap", 280 * ms, 300 * ms, "timeout", true},
		{"catalog in time", 280 * ms, 300 * ms, "ok", false},
	} {
		if got := hopStalled("x", tc.work, tc.timeout, tc.outcome); (got != "") != tc.wantHop {
			t.Errorf("%s: hopStalled = %q", tc.name, got)
		}
	}

	deadline := time.Now()
	at := func(before time.Duration, took time.Duration) stall.Stall {
		return stall.Stall{End: deadline.Add(-before), Took: took}
	}
	for _, tc := range []struct {
		name   string
		late   bool
		stalls []stall.Stall
		spare  time.Duration
		want   string
	}{
		{"in time, stalled", false, []stall.Stall{at(4*ms, 8*ms)}, 3 * ms, ""},
		{"late, stalled just before the deadline", true, []stall.Stall{at(4*ms, 8*ms)}, 3 * ms, "kept from running 8 ms"},
		{"late, no stall the watch saw", true, []stall.Stall{at(300*ms, 30*ms)}, 3 * ms, "a thread of this process"},
		{"late with no margin: the lesson's --margin 0ms", true, []stall.Stall{at(2*ms, 8*ms)}, 0, ""},
	} {
		got := answerStalled(tc.late, tc.stalls, deadline, tc.spare)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: answerStalled = %q, want %q in it", tc.name, got, tc.want)
		}
	}
}
