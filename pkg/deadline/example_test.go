package deadline_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Lesson 7: the caller has 160ms left and the call's own cap is 300ms.
// The call gets min(cap, remaining − margin): the budget wins.
func ExamplePolicy_Decide() {
	p := deadline.Policy{Floor: 50 * time.Millisecond}
	const cap = 300 * time.Millisecond

	ctx, cancel := context.WithTimeout(context.Background(), 160*time.Millisecond)
	defer cancel()
	d, err := p.Decide(ctx, cap)
	// The timeout is what is left when Decide runs, a hair under 160ms
	// (printing it would make the output depend on the machine's speed).
	fmt.Println("160ms left: clipped by budget:", d.ClippedByBudget, "timeout is all that is left:", d.Timeout == d.Remaining, err)

	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	d, err = p.Decide(ctx, cap)
	fmt.Println("2s left: clipped by budget:", d.ClippedByBudget, "timeout:", d.Timeout, err)

	// Less than the floor is left: don't head to the airport after the
	// flight has left.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = p.Decide(ctx, cap)
	fmt.Println("30ms left: skipped:", errors.Is(err, deadline.ErrInsufficientBudget))

	// Output:
	// 160ms left: clipped by budget: true timeout is all that is left: true <nil>
	// 2s left: clipped by budget: false timeout: 300ms <nil>
	// 30ms left: skipped: true
}

// The derived context tells the two timeouts apart through its cause.
func ExamplePolicy_Call() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	callCtx, cancelCall, d, err := deadline.Policy{}.Call(ctx, 20*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cancelCall()
	<-callCtx.Done() // a dependency slower than 20ms
	fmt.Println(d.Timeout, context.Cause(callCtx))
	// Output:
	// 20ms deadline: call timed out at its own cap
}

func ExampleClassify() {
	p := deadline.Policy{Margin: 5 * time.Millisecond}

	// The call's own 20ms cap fires first: the dependency was slow.
	callCtx, cancel, d, _ := p.Call(context.Background(), 20*time.Millisecond)
	<-callCtx.Done()
	fmt.Println(deadline.Classify(callCtx, d, callCtx.Err()))
	cancel()

	// The caller has only 40ms left and the cap is 1s: the budget fires.
	ctx, cancelCaller := context.WithTimeout(context.Background(), 40*time.Millisecond)
	defer cancelCaller()
	callCtx, cancel, d, _ = p.Call(ctx, time.Second)
	<-callCtx.Done()
	fmt.Println(deadline.Classify(callCtx, d, callCtx.Err()))
	cancel()

	// Too little left: the call is not made at all.
	_, _, d, err := deadline.Policy{Floor: time.Hour}.Call(ctx, time.Second)
	fmt.Println(deadline.Classify(ctx, d, err))

	// A call that returned without error.
	fmt.Println(deadline.Classify(context.Background(), deadline.Decision{}, nil))
	// Output:
	// timeout
	// budget_exhausted
	// skipped
	// ok
}

func ExampleParseMillis() {
	for _, v := range []string{"250", "0250", "0", "-5", " 5", "5ms", "+5", "12345678901"} {
		d, err := deadline.ParseMillis(v)
		fmt.Printf("%q: %v %v\n", v, d, errors.Is(err, deadline.ErrBadHeader))
	}
	// Output:
	// "250": 250ms false
	// "0250": 250ms false
	// "0": 0s true
	// "-5": 0s true
	// " 5": 0s true
	// "5ms": 0s true
	// "+5": 0s true
	// "12345678901": 0s true
}

func ExampleFormatMillis() {
	fmt.Println(deadline.FormatMillis(1599 * time.Microsecond))
	fmt.Println(deadline.FormatMillis(-time.Second))
	// Output:
	// 1
	// 0
}

func ExampleEdgeOptions_Budget() {
	var o deadline.EdgeOptions // the zero value: 1.2s default, 10s max
	for _, header := range []string{"", "250", "99999999", "abc"} {
		budget, err := o.Budget(header)
		fmt.Printf("%q: %v %v\n", header, budget, err)
	}
	// Output:
	// "": 1.2s <nil>
	// "250": 250ms <nil>
	// "99999999": 10s <nil>
	// "abc": 0s deadline: bad deadline header: "abc" is not a whole number of milliseconds
}

func ExampleEdge() {
	checkout := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		left, ok := deadline.Remaining(r.Context())
		fmt.Println("has a deadline:", ok, "within the budget:", left <= 250*time.Millisecond)
	})
	h := deadline.Edge(deadline.EdgeOptions{})(checkout)

	r := httptest.NewRequest(http.MethodPost, "/checkout", nil)
	r.Header.Set(deadline.HeaderDeadline, "250")
	h.ServeHTTP(httptest.NewRecorder(), r)

	r = httptest.NewRequest(http.MethodPost, "/checkout", nil)
	r.Header.Set(deadline.HeaderDeadline, "soon")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Header().Get("Content-Type"))
	// Output:
	// has a deadline: true within the budget: true
	// 400 application/problem+json
}

func ExampleSetHeaders() {
	ctx := deadline.WithClientDeadline(context.Background(), time.Now().Add(time.Hour))
	h := http.Header{}
	deadline.SetHeaders(ctx, h)
	// No budget on ctx, so only the passive client deadline is sent.
	fmt.Println(h.Get(deadline.HeaderDeadline) == "", h.Get(deadline.HeaderClientDeadline) != "")
	// Output:
	// true true
}

// A client for another Mercado service: every call spends what is left of
// the caller's budget, never more than the method's own cap.
func ExampleUnaryClientInterceptor() {
	policy := deadline.Policy{Margin: 20 * time.Millisecond, Floor: 50 * time.Millisecond}
	cc, err := grpc.NewClient("localhost:8081",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(deadline.UnaryClientInterceptor(deadline.ClientOptions{
			Policy: func(context.Context) deadline.Policy { return policy },
			Cap:    func(method string) time.Duration { return 300 * time.Millisecond },
			Hooks: deadline.Hooks{OnCall: func(ctx context.Context, c deadline.CallInfo) {
				fmt.Println(c.Method, c.Outcome, c.Timeout)
			}},
		})))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cc.Close()

	// In a handler, ctx is the incoming request's context.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = grpc_health_v1.NewHealthClient(cc).Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	if errors.Is(err, deadline.ErrInsufficientBudget) {
		fmt.Println("not enough budget left to make the call")
	}
}

func ExampleUnaryServerInterceptor() {
	policy := deadline.Policy{Floor: 50 * time.Millisecond, Admission: true}
	srv := grpc.NewServer(grpc.UnaryInterceptor(deadline.UnaryServerInterceptor(deadline.ServerOptions{
		Policy: func(context.Context) deadline.Policy { return policy },
	})))
	defer srv.Stop()
	// Register services on srv and Serve as usual.
}
