package payments

import (
	"context"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
)

// grpcServer adapts Service to the PaymentsService contract.
type grpcServer struct {
	paymentsv1.UnimplementedPaymentsServiceServer
	svc   *Service
	audit *AuditTrail
}

func toProto(c Charge) *paymentsv1.Charge {
	return &paymentsv1.Charge{ChargeId: c.ID, PaymentKey: c.PaymentKey, OrderId: c.OrderID, AmountCents: c.AmountCents, Status: statusToProto(c.Status)}
}

// statusToProto is the one mapping from a charge's status to the wire's.
func statusToProto(s Status) paymentsv1.ChargeStatus {
	switch s {
	case StatusPending:
		return paymentsv1.ChargeStatus_CHARGE_STATUS_PENDING
	case StatusSucceeded:
		return paymentsv1.ChargeStatus_CHARGE_STATUS_SUCCEEDED
	case StatusFailed:
		return paymentsv1.ChargeStatus_CHARGE_STATUS_FAILED
	}
	return paymentsv1.ChargeStatus_CHARGE_STATUS_UNSPECIFIED
}

func (g grpcServer) CreateCharge(ctx context.Context, req *paymentsv1.ChargeRequest) (*paymentsv1.Charge, error) {
	c, err := g.svc.CreateCharge(ctx, Charge{
		PaymentKey: req.GetPaymentKey(), OrderID: req.GetOrderId(), Customer: req.GetCustomer(),
		AmountCents: req.GetAmountCents(), RequestID: req.GetRequestId(),
	})
	if err != nil {
		return nil, apperr.Status(err)
	}
	return toProto(c), nil
}

func (g grpcServer) VoidCharge(ctx context.Context, req *paymentsv1.VoidChargeRequest) (*paymentsv1.Charge, error) {
	c, err := g.svc.VoidCharge(ctx, req.GetPaymentKey())
	if err != nil {
		return nil, apperr.Status(err)
	}
	return toProto(c), nil
}

func (g grpcServer) GetCharge(ctx context.Context, req *paymentsv1.GetChargeRequest) (*paymentsv1.Charge, error) {
	c, err := g.svc.GetCharge(ctx, req.GetPaymentKey())
	if err != nil {
		return nil, apperr.Status(err)
	}
	return toProto(c), nil
}

func (g grpcServer) ScreenOrder(ctx context.Context, req *paymentsv1.ScreenOrderRequest) (*paymentsv1.Screening, error) {
	r := ScreenRequest{OrderID: req.GetOrderId(), Customer: req.GetCustomer(), Address: req.GetAddress()}
	for _, it := range req.GetItems() {
		r.Items = append(r.Items, ScreenItem{SKU: it.GetSku(), Qty: it.GetQty()})
	}
	sc, err := g.svc.ScreenOrder(ctx, r)
	if err != nil {
		return nil, apperr.Status(err)
	}
	return &paymentsv1.Screening{Verdict: verdictToProto(sc.Verdict), Score: int32(sc.Score)}, nil
}

// verdictToProto is the one mapping from a screen's verdict to the wire's.
func verdictToProto(v Verdict) paymentsv1.ScreenVerdict {
	switch v {
	case Approved:
		return paymentsv1.ScreenVerdict_SCREEN_VERDICT_APPROVED
	case Declined:
		return paymentsv1.ScreenVerdict_SCREEN_VERDICT_DECLINED
	}
	return paymentsv1.ScreenVerdict_SCREEN_VERDICT_UNSPECIFIED
}

func (g grpcServer) RecordAudit(ctx context.Context, req *paymentsv1.AuditEvent) (*paymentsv1.AuditEntry, error) {
	e := AuditEntry{
		OrderID: req.GetOrderId(), Customer: req.GetCustomer(), TotalCents: req.GetTotalCents(),
		ChargeID: req.GetChargeId(), RequestID: req.GetRequestId(),
	}
	if ms := req.GetConfirmedUnixMs(); ms > 0 {
		e.ConfirmedAt = time.UnixMilli(ms)
	}
	e, err := g.audit.Record(ctx, e)
	if err != nil {
		return nil, apperr.Status(err)
	}
	return &paymentsv1.AuditEntry{OrderId: e.OrderID, RecordedUnixMs: e.RecordedAt.UnixMilli()}, nil
}
