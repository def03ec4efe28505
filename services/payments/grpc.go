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
	e, err := g.audit.Record(ctx, auditFromProto(req))
	if err != nil {
		return nil, apperr.Status(err)
	}
	return auditToProto(e), nil
}

func (g grpcServer) RecordAudits(ctx context.Context, req *paymentsv1.RecordAuditsRequest) (*paymentsv1.RecordAuditsResponse, error) {
	entries := make([]AuditEntry, len(req.GetEvents()))
	for i, ev := range req.GetEvents() {
		entries[i] = auditFromProto(ev)
	}
	results, err := g.audit.RecordBatch(ctx, entries)
	if err != nil {
		return nil, apperr.Status(err)
	}
	out := &paymentsv1.RecordAuditsResponse{Results: make([]*paymentsv1.AuditResult, len(results))}
	for i, r := range results {
		if r.Err != nil {
			// The code and public message RecordAudit would have answered
			// with for this event alone.
			out.Results[i] = &paymentsv1.AuditResult{Outcome: &paymentsv1.AuditResult_Refused{Refused: &paymentsv1.AuditRefusal{
				Code: int32(apperr.GRPCCode(r.Err)), Message: apperr.Public(r.Err)}}}
			continue
		}
		out.Results[i] = &paymentsv1.AuditResult{Outcome: &paymentsv1.AuditResult_Entry{Entry: auditToProto(r.Entry)}}
	}
	return out, nil
}

// auditFromProto is an audit event as the trail takes it; a missing
// confirmation time stays zero, for validation to refuse.
func auditFromProto(ev *paymentsv1.AuditEvent) AuditEntry {
	e := AuditEntry{
		OrderID: ev.GetOrderId(), Customer: ev.GetCustomer(), TotalCents: ev.GetTotalCents(),
		ChargeID: ev.GetChargeId(), RequestID: ev.GetRequestId(),
	}
	if ms := ev.GetConfirmedUnixMs(); ms > 0 {
		e.ConfirmedAt = time.UnixMilli(ms)
	}
	return e
}

func auditToProto(e AuditEntry) *paymentsv1.AuditEntry {
	return &paymentsv1.AuditEntry{OrderId: e.OrderID, RecordedUnixMs: e.RecordedAt.UnixMilli()}
}
