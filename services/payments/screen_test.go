package payments_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/sim"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
)

// The screen declines a customer on its watch list, approves any other
// order however large, and stores nothing: asking again gives the same
// verdict.
func TestScreenOrderVerdicts(t *testing.T) {
	c, _ := startPayments(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	many := make([]int64, 50)
	for i := range many {
		many[i] = 1000
	}
	for _, tc := range []struct {
		name     string
		customer string
		qty      []int64
		want     paymentsv1.ScreenVerdict
		score    int32
	}{
		{"one unit", "ada", []int64{1}, paymentsv1.ScreenVerdict_SCREEN_VERDICT_APPROVED, 0},
		{"40 units over two lines", "ada", []int64{30, 10}, paymentsv1.ScreenVerdict_SCREEN_VERDICT_APPROVED, 2},
		{"the largest order there is", "ada", many, paymentsv1.ScreenVerdict_SCREEN_VERDICT_APPROVED, 50},
		{"on the watch list", "mallory", []int64{1}, paymentsv1.ScreenVerdict_SCREEN_VERDICT_DECLINED, 100},
		{"on the watch list, in capitals", " Mallory ", []int64{1}, paymentsv1.ScreenVerdict_SCREEN_VERDICT_DECLINED, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &paymentsv1.ScreenOrderRequest{OrderId: "ord_1", Customer: tc.customer, Address: "1 Loop Rd"}
			for _, q := range tc.qty {
				req.Items = append(req.Items, &paymentsv1.ScreenItem{Sku: "tea-sencha", Qty: q})
			}
			for range 2 {
				got, err := c.ScreenOrder(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if got.GetVerdict() != tc.want || got.GetScore() != tc.score {
					t.Errorf("ScreenOrder = %v score %d, want %v score %d", got.GetVerdict(), got.GetScore(), tc.want, tc.score)
				}
			}
		})
	}
}

// The screen's vendor has faults of its own: an error rate of 1 makes it
// unavailable, and a latency holds its answer back; the charge's faults
// are not the screen's.
func TestScreenOrderFaults(t *testing.T) {
	c, p := startPayments(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := &paymentsv1.ScreenOrderRequest{OrderId: "ord_1", Customer: "ada", Address: "1 Loop Rd",
		Items: []*paymentsv1.ScreenItem{{Sku: "tea-sencha", Qty: 1}}}

	setFaults(t, ctx, p, faults.Set{sim.PaymentsCreateCharge: {ErrorRate: 1}})
	if _, err := c.ScreenOrder(ctx, req); err != nil {
		t.Errorf("ScreenOrder with the charge failing = %v, want an answer", err)
	}

	setFaults(t, ctx, p, faults.Set{sim.PaymentsScreenOrder: {ErrorRate: 1}})
	_, err := c.ScreenOrder(ctx, req)
	if s := status.Convert(err); s.Code() != codes.Unavailable || s.Message() == "" {
		t.Errorf("ScreenOrder with error-rate=1 = %v, want Unavailable", err)
	}

	const latency = 60 * time.Millisecond
	setFaults(t, ctx, p, faults.Set{sim.PaymentsScreenOrder: {Latency: latency}})
	start := time.Now()
	if _, err := c.ScreenOrder(ctx, req); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < latency {
		t.Errorf("ScreenOrder took %v with a %v latency", took, latency)
	}
}

// setFaults puts set in force through payments' admin API, as `mercado
// fault payments` does.
func setFaults(t *testing.T, ctx context.Context, p *serve.Process, set faults.Set) {
	t.Helper()
	c := admin.Client{URL: "http://" + p.AdminAddr + "/"}
	if _, err := c.SetFaults(ctx, set); err != nil {
		t.Fatalf("SetFaults(%v): %v", set, err)
	}
}
