package lab

import (
	"fmt"
	"time"

	"github.com/mercado-lab/mercado/internal/stall"
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
func answerStalled(late bool, stalls []stall.Stall, deadline time.Time, spare time.Duration) string {
	if !late || spare <= 0 {
		return ""
	}
	why := fmt.Sprintf("its answer missed the deadline although it had %d ms to spare", spare.Milliseconds())
	// The answer is on its way in the last few spares before the
	// deadline: orders', the gateway's, and its own travel.
	window := 4*spare + 2*time.Millisecond
	if s := stall.Longest(stalls, deadline.Add(-window), deadline); s > 0 {
		return fmt.Sprintf("%s: just before the deadline this process was kept from running %d ms", why, s.Round(time.Millisecond).Milliseconds())
	}
	return why + ": a thread of this process was kept from running"
}
