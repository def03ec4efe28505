package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/pkg/deadline"
	"github.com/mercado-lab/mercado/pkg/resilience/breaker"
)

// Pair the budget with a breaker: the payments breaker opens when half of
// at least 4 calls in its window failed (the lesson: 20 calls in 10 s).
func Example() {
	b := breaker.New(breaker.Settings{
		Name:         "payments",
		MinCalls:     4,
		FailureRatio: 0.5,
		OpenFor:      30 * time.Second,
		OnStateChange: func(name string, from, to breaker.State) {
			fmt.Printf("  %s: %v -> %v\n", name, from, to)
		},
	})
	charge := func(err error) func() error {
		return func() error { return err }
	}

	steps := []struct {
		what string
		err  error
	}{
		{"charged", nil},
		{"card declined (a business answer)", status.Error(codes.FailedPrecondition, "declined")},
		{"caller's budget ran out (not the PSP's fault)", deadline.ErrBudgetExhausted},
		{"PSP unavailable", status.Error(codes.Unavailable, "psp down")},
		{"charge hit its own cap", deadline.ErrCallTimeout},
	}
	for _, s := range steps {
		_ = b.Do(charge(s.err))
		fmt.Printf("%-46s window %+v\n", s.what, b.Window())
	}

	err := b.Do(func() error {
		fmt.Println("never printed: the breaker is open")
		return nil
	})
	fmt.Println("next call:", err, "| retry after", b.RetryAfter().Round(time.Second))
	fmt.Println("maps to 503:", errors.Is(err, breaker.ErrOpen))
	// Output:
	// charged                                        window {Calls:1 Failures:0}
	// card declined (a business answer)              window {Calls:2 Failures:0}
	// caller's budget ran out (not the PSP's fault)  window {Calls:2 Failures:0}
	// PSP unavailable                                window {Calls:3 Failures:1}
	//   payments: closed -> open
	// charge hit its own cap                         window {Calls:0 Failures:0}
	// next call: breaker: open | retry after 30s
	// maps to 503: true
}

func ExampleClassify() {
	for _, err := range []error{
		nil,
		status.Error(codes.NotFound, "no such product"),
		deadline.ErrCallTimeout,
		status.Error(codes.Unavailable, "down"),
		deadline.ErrBudgetExhausted,
		deadline.ErrInsufficientBudget,
		status.Error(codes.DeadlineExceeded, "the server saw our deadline pass"),
	} {
		fmt.Printf("%-10v %v\n", breaker.Classify(err), err)
	}
	// Output:
	// success    <nil>
	// success    rpc error: code = NotFound desc = no such product
	// failure    deadline: call timed out at its own cap
	// failure    rpc error: code = Unavailable desc = down
	// excluded   deadline: caller's budget exhausted
	// excluded   deadline: insufficient budget
	// excluded   rpc error: code = DeadlineExceeded desc = the server saw our deadline pass
}
