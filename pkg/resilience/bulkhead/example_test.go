package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mercado-lab/mercado/pkg/resilience/bulkhead"
)

// Put the vendor on its own pool: in budgeted mode the payments dependency
// has its own small bulkhead that fails fast when full, so a slow payments
// vendor cannot take the slots of catalog or shipping calls.
func ExamplePool_Acquire() {
	payments := bulkhead.New(bulkhead.Settings{Name: "payments", Capacity: 2, MaxWait: 0})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()

	for call := 1; call <= 3; call++ {
		waited, err := payments.Acquire(ctx)
		switch {
		case errors.Is(err, bulkhead.ErrFull):
			fmt.Printf("call %d: rejected after %v -> ResourceExhausted / 503\n  %v\n", call, waited, err)
		case err != nil:
			fmt.Printf("call %d: budget gone: %v\n", call, err)
		default:
			fmt.Printf("call %d: slot taken, payments is slow and keeps it\n", call)
		}
	}
	fmt.Printf("%+v\n", payments.Stats())

	// Output:
	// call 1: slot taken, payments is slow and keeps it
	// call 2: slot taken, payments is slow and keeps it
	// call 3: rejected after 0s -> ResourceExhausted / 503
	//   bulkhead: full: pool "payments" has all 2 slots in use and does not wait
	// {Name:payments Capacity:2 InFlight:2 Waiting:0 Acquired:2 Rejected:1 Expired:0}
}

// Queue wait counts against the budget: a caller with 20ms left waits at
// most 20ms for a slot, however long MaxWait is, and the error says the
// budget ran out rather than that the pool was full.
func ExampleNew() {
	shipping := bulkhead.New(bulkhead.Settings{Name: "shipping", Capacity: 1, MaxWait: time.Second})
	if _, err := shipping.Acquire(context.Background()); err != nil { // a slow call holds the only slot
		fmt.Println(err)
		return
	}
	defer shipping.Release()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	waited, err := shipping.Acquire(ctx)
	fmt.Println("waited under 1s:", waited < time.Second)
	fmt.Println("pool full:", errors.Is(err, bulkhead.ErrFull))
	fmt.Println("budget expired while queued:", errors.Is(err, context.DeadlineExceeded))
	fmt.Printf("%+v\n", shipping.Stats())

	// Output:
	// waited under 1s: true
	// pool full: false
	// budget expired while queued: true
	// {Name:shipping Capacity:1 InFlight:1 Waiting:0 Acquired:1 Rejected:0 Expired:1}
}
