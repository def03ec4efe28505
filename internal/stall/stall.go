// Package stall watches for the stretches in which this process did not
// run: the operating system kept it from running, and no timer of it
// could fire either. On a busy machine they last several milliseconds,
// now and then tens or hundreds of them, and a lab's figure that one of
// them decided measures the machine, not the shop.
package stall

import "time"

// Stall is a stretch in which this process did not run: it ended at End
// and lasted Took.
type Stall struct {
	End  time.Time
	Took time.Duration
}

// Watch notes the stalls of this process: it asks to wake every
// millisecond, and a wake-up more than a millisecond late is a stall.
type Watch struct {
	done   chan struct{}
	stalls chan []Stall
}

// Start starts a watch; Stop ends it.
func Start() *Watch {
	w := &Watch{done: make(chan struct{}), stalls: make(chan []Stall, 1)}
	go func() {
		var seen []Stall
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
				seen = append(seen, Stall{End: now, Took: late})
			}
		}
	}()
	return w
}

// Stop ends the watch and returns the stalls it saw.
func (w *Watch) Stop() []Stall {
	close(w.done)
	return <-w.stalls
}

// Longest is the longest of stalls that overlaps [from, to].
func Longest(stalls []Stall, from, to time.Time) time.Duration {
	var longest time.Duration
	for _, s := range stalls {
		if s.End.After(from) && s.End.Add(-s.Took).Before(to) {
			longest = max(longest, s.Took)
		}
	}
	return longest
}
