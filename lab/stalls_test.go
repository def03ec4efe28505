package lab

import (
	"runtime"
	"strings"
	"testing"
	"time"
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
	at := func(before time.Duration, took time.Duration) stall {
		return stall{end: deadline.Add(-before), took: took}
	}
	for _, tc := range []struct {
		name   string
		late   bool
		stalls []stall
		spare  time.Duration
		want   string
	}{
		{"in time, stalled", false, []stall{at(4*ms, 8*ms)}, 3 * ms, ""},
		{"late, stalled just before the deadline", true, []stall{at(4*ms, 8*ms)}, 3 * ms, "kept from running 8 ms"},
		{"late, no stall the watch saw", true, []stall{at(300*ms, 30*ms)}, 3 * ms, "a thread of this process"},
		{"late with no margin: the lesson's --margin 0ms", true, []stall{at(2*ms, 8*ms)}, 0, ""},
	} {
		got := answerStalled(tc.late, tc.stalls, deadline, tc.spare)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: answerStalled = %q, want %q in it", tc.name, got, tc.want)
		}
	}
}

// TestStallWatchSeesAStall: with the one processor kept busy for 60 ms,
// the watch cannot wake when it asked to; it sees a stall of about the
// 10 ms the Go scheduler lets a busy goroutine run before it preempts it.
func TestStallWatchSeesAStall(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	w := watchStalls()
	time.Sleep(5 * time.Millisecond)
	from := time.Now()
	for time.Since(from) < 60*time.Millisecond {
	}
	to := time.Now()
	time.Sleep(5 * time.Millisecond)
	stalls := w.stop()
	if got := longestStall(stalls, from, to); got < 3*time.Millisecond {
		t.Errorf("longest stall while the processor was busy: %v (stalls %+v), want several ms", got, stalls)
	}
	for _, s := range stalls {
		if s.took <= time.Millisecond {
			t.Errorf("stall %+v: only wake-ups more than 1 ms late are stalls", s)
		}
	}
}
