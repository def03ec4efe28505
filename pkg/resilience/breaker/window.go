package breaker

// window holds the verdicts of the last len(failed) counted calls: an exact
// count window, not a time window ("the last 20 calls").
type window struct {
	failed   []bool // ring buffer: true for a failure
	next     int    // where the next verdict goes
	calls    int    // verdicts held, up to len(failed)
	failures int    // failures among them
}

func newWindow(size int) window {
	return window{failed: make([]bool, size)}
}

// add records one verdict, pushing out the oldest once the ring is full.
func (w *window) add(failed bool) {
	if w.calls == len(w.failed) {
		if w.failed[w.next] {
			w.failures--
		}
	} else {
		w.calls++
	}
	w.failed[w.next] = failed
	if failed {
		w.failures++
	}
	w.next = (w.next + 1) % len(w.failed)
}

// reset empties the window.
func (w *window) reset() {
	clear(w.failed)
	w.next, w.calls, w.failures = 0, 0, 0
}

// full reports whether the window holds as many verdicts as it can.
func (w *window) full() bool { return w.calls == len(w.failed) }
