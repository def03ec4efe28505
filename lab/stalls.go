package lab

import (
	"fmt"
	"time"
)

// A replay checks the lesson's arithmetic with real timers, and the
// arithmetic leaves a few milliseconds to spare at its tightest: a hop
// keeps its margin for its answer's way back after its last call is cut,
// a hop that works 280 ms has 20 ms to spare under a 300 ms cap. That
// holds while this process runs when its timers fire. On a busy machine
// it may not: the operating system can keep it from running for several
// milliseconds, now and then for tens of them, and a stall at the wrong
// moment — an answer on its way back at the deadline, a hop near its cap —
// decides the outcome instead of the budget. A replay knows those
// outcomes: a call that timed out although its work ends well within its
// timeout, an answer that missed the deadline although it had a margin to
// spare. When a try ends like that, the replay says so and measures again,
// on a fresh shop; it also watches for stalls while it measures, to say
// how long the one it saw was.

// maxTries is how many times a replay measures before it shows a try
// that a stall decided, marked as such.
const maxTries = 5

// untilUndisturbed runs once again while a stall of this process rather
// than the budget decided its try, up to maxTries. It returns the last
// try, why each earlier one was measured again, and why the last one was
// disturbed when every try was ("" when it was not).
func untilUndisturbed[R any](once func() (R, string, error)) (R, []string, string, error) {
	var again []string
	for try := 1; ; try++ {
		r, stalled, err := once()
		if err != nil || stalled == "" || try == maxTries {
			return r, again, stalled, err
		}
		again = append(again, stalled)
	}
}

// stall is a stretch in which this process did not run: it ended at end
// and lasted took.
type stall struct {
	end  time.Time
	took time.Duration
}

// stallWatch notes the stalls of this process: it asks to wake every
// millisecond, and a wake-up more than a millisecond late is a stall in
// which no timer of the shop could fire either.
type stallWatch struct {
	done   chan struct{}
	stalls chan []stall
}

func watchStalls() *stallWatch {
	w := &stallWatch{done: make(chan struct{}), stalls: make(chan []stall, 1)}
	go func() {
		var seen []stall
		for {
			select {
			case <-w.done:
				w.stalls <- seen
				return
			default:
			}
			asked := time.Now()
			time.Sleep(time.Millisecond)
			now := time.Now()
			if late := now.Sub(asked) - time.Millisecond; late > time.Millisecond {
				seen = append(seen, stall{end: now, took: late})
			}
		}
	}()
	return w
}

// stop ends the watch and returns the stalls it saw.
func (w *stallWatch) stop() []stall {
	close(w.done)
	return <-w.stalls
}

// longestStall is the longest of stalls that overlaps [from, to].
func longestStall(stalls []stall, from, to time.Time) time.Duration {
	var longest time.Duration
	for _, s := range stalls {
		if s.end.After(from) && s.end.Add(-s.took).Before(to) {
			longest = max(longest, s.took)
		}
	}
	return longest
}

// hopStalled says why a try was decided by a stall in one of its calls,
// or "": a call timed out although its work ends well within its timeout.
func hopStalled(name string, work, timeout time.Duration, outcome string) string {
	if outcome != "timeout" || work > timeout-5*time.Millisecond {
		return ""
	}
	return fmt.Sprintf("%s works %d ms, yet timed out at its %d ms: this process was kept from running meanwhile",
		name, work.Milliseconds(), timeout.Milliseconds())
}

// answerStalled says why a try was decided on the answer's way back, or
// "": the answer came too late, or without orders' report of its hops,
// although the arithmetic left it time to spare (a margin). Only a stall
// does that: of this process, which the watch sees, or of the one thread
// that carried the answer while the others ran, which it cannot.
func answerStalled(late bool, stalls []stall, deadline time.Time, spare time.Duration) string {
	if !late || spare <= 0 {
		return ""
	}
	why := fmt.Sprintf("its answer missed the deadline although it had %d ms to spare", spare.Milliseconds())
	// The answer is on its way in the last few spares before the
	// deadline: orders', the gateway's, and its own travel.
	window := 4*spare + 2*time.Millisecond
	if s := longestStall(stalls, deadline.Add(-window), deadline); s > 0 {
		return fmt.Sprintf("%s: just before the deadline this process was kept from running %d ms", why, s.Round(time.Millisecond).Milliseconds())
	}
	return why + ": a thread of this process was kept from running"
}
