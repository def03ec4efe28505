package bulkhead

// waiter is one caller queued for a slot. Release hands it a slot by
// setting granted and closing ready, both under the pool's lock.
type waiter struct {
	ready   chan struct{}
	granted bool
	// limit is how many slots may be in use for a waiter of AcquireWithin
	// to take one.
	limit      int
	prev, next *waiter
}

// waitQueue is a FIFO of waiters as a doubly linked list, so a waiter whose
// wait ends (MaxWait or ctx) leaves from the middle in O(1). It is guarded
// by the pool's lock.
type waitQueue struct {
	head, tail *waiter
	len        int
}

func (q *waitQueue) pushBack(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
	q.len++
}

// popFront removes and returns the oldest waiter, or nil.
func (q *waitQueue) popFront() *waiter {
	w := q.head
	if w != nil {
		q.remove(w)
	}
	return w
}

// remove takes w out of the queue; w must be in it.
func (q *waitQueue) remove(w *waiter) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	q.len--
}
