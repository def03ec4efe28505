package orders

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
	shippingv1 "github.com/mercado-lab/mercado/proto/shipping/v1"
)

// The gRPC adapters of the six dependencies. They translate; errors come
// back as the dependency's gRPC status for the service to classify.
//
// Every call below passes its dependency's resilience.ClientChain
// (outbound.go): retries, pool, breaker, then the clip, where
// deadline.Policy.Decide (pkg/deadline/budget.go) computes the call's
// timeout. Budgeted: min(cap, remaining − margin), and no call at all with
// less than the floor left. Naive: the dependency's cap, whatever is left.
// The caps are config.go's (--catalog-cap, --fraud-cap, --payments-cap,
// --shipping-cap, --estimate-cap) and the audit trail's AuditTimeout.

type catalogClient struct {
	c catalogv1.CatalogServiceClient
}

var _ Catalog = catalogClient{}

func (c catalogClient) Reserve(ctx context.Context, orderID string, items []Item) (Reservation, error) {
	req := &catalogv1.ReserveStockRequest{OrderId: orderID}
	for _, it := range items {
		req.Lines = append(req.Lines, &catalogv1.Line{Sku: it.SKU, Qty: it.Qty})
	}
	// Timeout: Policy.Decide — budgeted min(CatalogCap, remaining − margin),
	// naive CatalogCap; fragile (caps off) none.
	r, err := c.c.ReserveStock(ctx, req)
	if err != nil {
		return Reservation{}, err
	}
	res := Reservation{ID: r.GetReservationId(), TotalCents: r.GetTotalCents()}
	for _, l := range r.GetLines() {
		res.Items = append(res.Items, Item{SKU: l.GetSku(), Qty: l.GetQty(), UnitPriceCents: l.GetUnitPriceCents()})
	}
	return res, nil
}

func (c catalogClient) Release(ctx context.Context, reservationID string) error {
	// Timeout: Policy.Decide, as Reserve.
	_, err := c.c.ReleaseStock(ctx, &catalogv1.ReleaseStockRequest{ReservationId: reservationID})
	return err
}

type paymentsClient struct {
	c paymentsv1.PaymentsServiceClient
}

var _ Payments = paymentsClient{}

func chargeFromProto(c *paymentsv1.Charge) Charge {
	return Charge{ID: c.GetChargeId(), Status: chargeStatusFromProto(c.GetStatus())}
}

// chargeStatusFromProto is the one mapping from the wire's charge status
// to orders' own. A status this version does not know is none of them,
// so it is neither a success nor a pending charge.
func chargeStatusFromProto(s paymentsv1.ChargeStatus) ChargeStatus {
	switch s {
	case paymentsv1.ChargeStatus_CHARGE_STATUS_PENDING:
		return ChargePending
	case paymentsv1.ChargeStatus_CHARGE_STATUS_SUCCEEDED:
		return ChargeSucceeded
	case paymentsv1.ChargeStatus_CHARGE_STATUS_FAILED:
		return ChargeFailed
	}
	return ""
}

func (c paymentsClient) Charge(ctx context.Context, o Order) (Charge, error) {
	// Timeout: Policy.Decide — budgeted min(PaymentsCap, remaining −
	// margin), naive PaymentsCap; fragile (caps off) none.
	ctx, sent := watchSent(ctx)
	ch, err := c.c.CreateCharge(ctx, &paymentsv1.ChargeRequest{
		PaymentKey: o.PaymentKey, OrderId: o.ID, Customer: o.Customer,
		AmountCents: o.TotalCents, RequestId: o.RequestID,
	})
	if err != nil {
		if !sent.unsure.Load() {
			// Refused, or never sent: nothing was charged (notcharged.go).
			err = notCharged{err}
		}
		return Charge{}, err
	}
	return chargeFromProto(ch), nil
}

func (c paymentsClient) Get(ctx context.Context, key string) (Charge, error) {
	// Timeout: Policy.Decide, as Charge.
	ch, err := c.c.GetCharge(ctx, &paymentsv1.GetChargeRequest{PaymentKey: key})
	if err != nil {
		return Charge{}, err
	}
	return chargeFromProto(ch), nil
}

func (c paymentsClient) Void(ctx context.Context, key string) (Charge, error) {
	// Timeout: Policy.Decide, as Charge.
	ch, err := c.c.VoidCharge(ctx, &paymentsv1.VoidChargeRequest{PaymentKey: key})
	if err != nil {
		return Charge{}, err
	}
	return chargeFromProto(ch), nil
}

// fraudClient asks payments' fraud screen, on a connection of its own
// that runs the fraud chain (its own cap, bulkhead and breaker), apart
// from the charges'.
type fraudClient struct {
	c paymentsv1.PaymentsServiceClient
}

var _ Fraud = fraudClient{}

func (c fraudClient) Screen(ctx context.Context, o Order) (Screening, error) {
	req := &paymentsv1.ScreenOrderRequest{OrderId: o.ID, Customer: o.Customer, Address: o.Address}
	for _, it := range o.Items {
		req.Items = append(req.Items, &paymentsv1.ScreenItem{Sku: it.SKU, Qty: it.Qty})
	}
	// Timeout: Policy.Decide — budgeted min(FraudCap, remaining − margin),
	// naive FraudCap; fragile (caps off) none.
	r, err := c.c.ScreenOrder(ctx, req)
	if err != nil {
		return Screening{}, err
	}
	switch r.GetVerdict() {
	case paymentsv1.ScreenVerdict_SCREEN_VERDICT_APPROVED:
		return Screening{Approved: true, Score: int(r.GetScore())}, nil
	case paymentsv1.ScreenVerdict_SCREEN_VERDICT_DECLINED:
		return Screening{Score: int(r.GetScore())}, nil
	}
	// A verdict this version does not know approves nothing.
	return Screening{}, fmt.Errorf("fraud screen: unknown verdict %v", r.GetVerdict())
}

// shippingClient books through c and quotes through estimate: the same
// service behind two client chains, "shipping" and "estimate".
type shippingClient struct {
	c, estimate shippingv1.ShippingServiceClient
}

var _ Shipping = shippingClient{}

func (c shippingClient) Ship(ctx context.Context, o Order) (string, error) {
	req := &shippingv1.CreateShipmentRequest{OrderId: o.ID, Address: o.Address}
	for _, it := range o.Items {
		req.Items = append(req.Items, &shippingv1.Item{Sku: it.SKU, Qty: it.Qty})
	}
	// Timeout: Policy.Decide — budgeted min(ShippingCap, remaining −
	// margin), naive ShippingCap; fragile (caps off) none.
	sh, err := c.c.CreateShipment(ctx, req)
	if err != nil {
		return "", err
	}
	return sh.GetShipmentId(), nil
}

func (c shippingClient) Estimate(ctx context.Context, o Order) (DeliveryEstimate, error) {
	req := &shippingv1.EstimateDeliveryRequest{Address: o.Address}
	for _, it := range o.Items {
		req.Items = append(req.Items, &shippingv1.Item{Sku: it.SKU, Qty: it.Qty})
	}
	// Timeout: Policy.Decide — budgeted min(EstimateCap, remaining −
	// margin), naive EstimateCap; fragile (caps off) none.
	e, err := c.estimate.EstimateDelivery(ctx, req)
	if err != nil {
		return DeliveryEstimate{}, err
	}
	return DeliveryEstimate{MinBusinessDays: e.GetMinBusinessDays(), MaxBusinessDays: e.GetMaxBusinessDays()}, nil
}

type auditClient struct {
	c paymentsv1.PaymentsServiceClient
}

var _ Audit = auditClient{}

func (c auditClient) Record(ctx context.Context, e AuditEvent) error {
	// Timeout: Policy.Decide — naive AuditTimeout, in line; budgeted
	// min(AuditTimeout, remaining − margin) when the Criticality mechanism
	// alone is off and the write is in line.
	_, err := c.c.RecordAudit(ctx, auditToProto(e))
	return err
}

func (c auditClient) RecordBatch(ctx context.Context, events []AuditEvent) ([]error, error) {
	// Timeout: Policy.Decide — min(AuditTimeout, remaining − margin), where
	// the queue's worker gives each attempt the lifetime left to its
	// batch's events as its deadline (audit.go).
	req := &paymentsv1.RecordAuditsRequest{Events: make([]*paymentsv1.AuditEvent, len(events))}
	for i, e := range events {
		req.Events[i] = auditToProto(e)
	}
	resp, err := c.c.RecordAudits(ctx, req)
	if err != nil {
		return nil, err
	}
	if got := len(resp.GetResults()); got != len(events) {
		return nil, status.Errorf(codes.Internal, "the audit trail answered %d results for %d events", got, len(events))
	}
	refused := make([]error, len(events))
	for i, r := range resp.GetResults() {
		if no := r.GetRefused(); no != nil {
			refused[i] = status.Error(codes.Code(no.GetCode()), no.GetMessage())
		}
	}
	return refused, nil
}

// auditToProto is an audit event as payments takes it.
func auditToProto(e AuditEvent) *paymentsv1.AuditEvent {
	return &paymentsv1.AuditEvent{
		OrderId: e.OrderID, Customer: e.Customer, TotalCents: e.TotalCents, ChargeId: e.ChargeID,
		RequestId: e.RequestID, ConfirmedUnixMs: e.ConfirmedAt.UnixMilli(),
	}
}

// conns are the service's client connections, closed on shutdown.
type conns []*grpc.ClientConn

func (cs conns) Close() {
	for _, c := range cs {
		_ = c.Close()
	}
}
