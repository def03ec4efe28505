package stall

import (
	"runtime"
	"testing"
	"time"
)

// TestWatchSeesAStall: with the one processor kept busy for 60 ms,
// the watch cannot wake when it asked to; it sees a stall of about the
// 10 ms the Go scheduler lets a busy goroutine run before it preempts it.
func TestWatchSeesAStall(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	w := Start()
	time.Sleep(5 * time.Millisecond)
	from := time.Now()
	for time.Since(from) < 60*time.Millisecond {
	}
	to := time.Now()
	time.Sleep(5 * time.Millisecond)
	stalls := w.Stop()
	if got := Longest(stalls, from, to); got < 3*time.Millisecond {
		t.Errorf("longest stall while the processor was busy: %v (stalls %+v), want several ms", got, stalls)
	}
	for _, s := range stalls {
		if s.Took <= time.Millisecond {
			t.Errorf("stall %+v: only wake-ups more than 1 ms late are stalls", s)
		}
	}
}
