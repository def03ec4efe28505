package payments_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/faults"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
	"github.com/mercado-lab/mercado/services/payments"
)

// A payments service whose every charge is refused at the door answers
// Unavailable marked not processed, and keeps nothing: the key is not
// claimed, so a later try under it is a first try. Methods it does not
// simulate, and the health service, are not refused.
func TestRefusedChargeLeavesNothing(t *testing.T) {
	cfg := payments.DefaultConfig()
	cfg.Addr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Faults = faults.Set{faults.AllMethods: {RefuseRate: 1}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(context.Background())
	p, err := payments.Start(runCtx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		stop()
		t.Fatalf("Start: %v", err)
	}
	defer func() {
		stop()
		if err := p.Wait(); err != nil {
			t.Errorf("payments stopped with %v", err)
		}
	}()
	cc, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	c := paymentsv1.NewPaymentsServiceClient(cc)

	req := &paymentsv1.ChargeRequest{PaymentKey: "pay_ord_r", OrderId: "ord_r", Customer: "ada", AmountCents: 2500, RequestId: "r"}
	for i := range 3 {
		_, err := c.CreateCharge(ctx, req)
		if status.Code(err) != codes.Unavailable || apperr.ReasonOf(err) != apperr.ReasonNotProcessed {
			t.Fatalf("try %d: CreateCharge = %v, want Unavailable marked %s", i+1, err, apperr.ReasonNotProcessed)
		}
	}
	if _, err := c.GetCharge(ctx, &paymentsv1.GetChargeRequest{PaymentKey: "pay_ord_r"}); status.Code(err) != codes.NotFound {
		t.Errorf("GetCharge after refusals = %v, want NotFound: a refused charge must leave no trace", err)
	}
	h, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health = %v, %v; the door refuses only the simulated methods", h, err)
	}
}
