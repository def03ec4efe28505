package orders

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/timing"
	ordersv1 "github.com/mercado-lab/mercado/proto/orders/v1"
)

// grpcServer adapts Service to the OrdersService contract.
type grpcServer struct {
	ordersv1.UnimplementedOrdersServiceServer
	svc *Service
}

func toProto(o Order) *ordersv1.Order {
	out := &ordersv1.Order{
		OrderId: o.ID, Status: statusToProto(o.Status), Customer: o.Customer, Address: o.Address,
		TotalCents: o.TotalCents, ChargeId: o.ChargeID, ShipmentId: o.ShipmentID,
		Failure: o.Failure, CreatedUnixMs: o.CreatedAt.UnixMilli(), ShipmentStatus: shipmentStatusToProto(o.ShipmentStatus),
	}
	for _, it := range o.Items {
		out.Items = append(out.Items, &ordersv1.Item{Sku: it.SKU, Qty: it.Qty, UnitPriceCents: it.UnitPriceCents})
	}
	if e := o.DeliveryEstimate; e != (DeliveryEstimate{}) {
		out.DeliveryEstimate = &ordersv1.DeliveryEstimate{MinBusinessDays: e.MinBusinessDays, MaxBusinessDays: e.MaxBusinessDays}
	}
	out.Degraded = o.Degraded
	return out
}

// statusToProto is the one mapping from an order's status to the wire's.
func statusToProto(s Status) ordersv1.OrderStatus {
	switch s {
	case StatusPending:
		return ordersv1.OrderStatus_ORDER_STATUS_PENDING
	case StatusPaymentPending:
		return ordersv1.OrderStatus_ORDER_STATUS_PAYMENT_PENDING
	case StatusConfirmed:
		return ordersv1.OrderStatus_ORDER_STATUS_CONFIRMED
	case StatusFailed:
		return ordersv1.OrderStatus_ORDER_STATUS_FAILED
	}
	return ordersv1.OrderStatus_ORDER_STATUS_UNSPECIFIED
}

// shipmentStatusToProto is the one mapping from a shipment's status to
// the wire's; an order not yet confirmed has none.
func shipmentStatusToProto(s ShipmentStatus) ordersv1.ShipmentStatus {
	switch s {
	case ShipmentPending:
		return ordersv1.ShipmentStatus_SHIPMENT_STATUS_PENDING
	case ShipmentBooked:
		return ordersv1.ShipmentStatus_SHIPMENT_STATUS_BOOKED
	}
	return ordersv1.ShipmentStatus_SHIPMENT_STATUS_UNSPECIFIED
}

// PlaceOrder runs the chain and sends every hop's timing back in the
// server-timing trailer, on success and failure alike, so the edge can
// show where the time went.
func (g grpcServer) PlaceOrder(ctx context.Context, req *ordersv1.PlaceOrderRequest) (*ordersv1.Order, error) {
	ctx, rec := timing.WithRecorder(ctx)
	defer func() {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(timing.MetadataKey, timing.Format(rec.Hops())))
	}()
	pr := PlaceRequest{
		Customer: req.GetCustomer(), Address: req.GetAddress(),
		IdempotencyKey: req.GetIdempotencyKey(), RequestID: req.GetRequestId(),
	}
	for _, it := range req.GetItems() {
		pr.Items = append(pr.Items, Item{SKU: it.GetSku(), Qty: it.GetQty()})
	}
	o, err := g.svc.PlaceOrder(ctx, pr)
	if st, ok := keyStatus(err); ok {
		return nil, st.Err()
	}
	if err != nil {
		return nil, apperr.Status(err)
	}
	return toProto(o), nil
}

func (g grpcServer) GetOrder(ctx context.Context, req *ordersv1.GetOrderRequest) (*ordersv1.Order, error) {
	o, err := g.svc.GetOrder(ctx, req.GetOrderId())
	if err != nil {
		return nil, apperr.Status(err)
	}
	return toProto(o), nil
}
