package payments_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/serve"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
	"github.com/mercado-lab/mercado/services/payments"
)

func startPayments(t *testing.T) (paymentsv1.PaymentsServiceClient, *serve.Process) {
	t.Helper()
	return startPaymentsWith(t, payments.DefaultConfig())
}

// startPaymentsWith is startPayments with cfg, on ports of its own.
func startPaymentsWith(t *testing.T, cfg payments.Config) (paymentsv1.PaymentsServiceClient, *serve.Process) {
	t.Helper()
	cfg.Addr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	p, err := payments.Start(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	cc, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		cancel()
		if err := p.Wait(); err != nil {
			t.Errorf("payments stopped with %v", err)
		}
	})
	return paymentsv1.NewPaymentsServiceClient(cc), p
}

func TestGRPC(t *testing.T) {
	c, p := startPayments(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	req := &paymentsv1.ChargeRequest{PaymentKey: "pay_ord_1", OrderId: "ord_1", Customer: "ada", AmountCents: 2500, RequestId: "r1"}
	first, err := c.CreateCharge(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if first.GetChargeId() == "" || first.GetPaymentKey() != "pay_ord_1" || first.GetOrderId() != "ord_1" ||
		first.GetAmountCents() != 2500 || first.GetStatus() != paymentsv1.ChargeStatus_CHARGE_STATUS_SUCCEEDED {
		t.Errorf("CreateCharge = %v", first)
	}
	again, err := c.CreateCharge(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if again.GetChargeId() != first.GetChargeId() {
		t.Errorf("second CreateCharge under the same key = %q, want the first charge %q", again.GetChargeId(), first.GetChargeId())
	}
	got, err := c.GetCharge(ctx, &paymentsv1.GetChargeRequest{PaymentKey: "pay_ord_1"})
	if err != nil || got.GetChargeId() != first.GetChargeId() {
		t.Errorf("GetCharge = %v, %v; want charge %q", got, err, first.GetChargeId())
	}

	errs := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"GetCharge unknown key", func() error {
			_, err := c.GetCharge(ctx, &paymentsv1.GetChargeRequest{PaymentKey: "pay_nope"})
			return err
		}, codes.NotFound},
		{"GetCharge without key", func() error {
			_, err := c.GetCharge(ctx, &paymentsv1.GetChargeRequest{})
			return err
		}, codes.InvalidArgument},
		{"CreateCharge without amount", func() error {
			_, err := c.CreateCharge(ctx, &paymentsv1.ChargeRequest{PaymentKey: "k", OrderId: "o"})
			return err
		}, codes.InvalidArgument},
		{"VoidCharge without key", func() error {
			_, err := c.VoidCharge(ctx, &paymentsv1.VoidChargeRequest{})
			return err
		}, codes.InvalidArgument},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); status.Code(err) != tt.want {
				t.Errorf("code = %v (%v), want %v", status.Code(err), err, tt.want)
			}
		})
	}

	// A void of a key never charged is a failed record that a late charge
	// attempt gets back; a void of a charged key returns the charge.
	void, err := c.VoidCharge(ctx, &paymentsv1.VoidChargeRequest{PaymentKey: "pay_ord_2"})
	if err != nil || void.GetStatus() != paymentsv1.ChargeStatus_CHARGE_STATUS_FAILED {
		t.Errorf("VoidCharge of an unknown key = %v, %v; want failed", void, err)
	}
	late, err := c.CreateCharge(ctx, &paymentsv1.ChargeRequest{PaymentKey: "pay_ord_2", OrderId: "ord_2", Customer: "ada", AmountCents: 900, RequestId: "r2"})
	if err != nil || late.GetStatus() != paymentsv1.ChargeStatus_CHARGE_STATUS_FAILED || late.GetChargeId() != void.GetChargeId() {
		t.Errorf("CreateCharge after the void = %v, %v; want the voided record", late, err)
	}
	charged, err := c.VoidCharge(ctx, &paymentsv1.VoidChargeRequest{PaymentKey: "pay_ord_1"})
	if err != nil || charged.GetChargeId() != first.GetChargeId() || charged.GetStatus() != paymentsv1.ChargeStatus_CHARGE_STATUS_SUCCEEDED {
		t.Errorf("VoidCharge of a charged key = %v, %v; want the charge", charged, err)
	}

	// The admin API counts the charges: one taken, none duplicated.
	resp, err := http.Get("http://" + p.AdminAddr + "/admin/charges")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st payments.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || st != (payments.Stats{Charges: 1, Succeeded: 1, RequestIDs: 1}) {
		t.Errorf("GET /admin/charges = %d %+v, want 200 with one charge", resp.StatusCode, st)
	}
}
