package shipping

import (
	"context"

	"github.com/mercado-lab/mercado/internal/apperr"
	shippingv1 "github.com/mercado-lab/mercado/proto/shipping/v1"
)

// grpcServer adapts Service to the ShippingService contract.
type grpcServer struct {
	shippingv1.UnimplementedShippingServiceServer
	svc *Service
}

func toProto(sh Shipment) *shippingv1.Shipment {
	return &shippingv1.Shipment{ShipmentId: sh.ID, OrderId: sh.OrderID, Address: sh.Address, Status: sh.Status}
}

func (g grpcServer) CreateShipment(ctx context.Context, req *shippingv1.CreateShipmentRequest) (*shippingv1.Shipment, error) {
	sh := Shipment{OrderID: req.GetOrderId(), Address: req.GetAddress()}
	for _, it := range req.GetItems() {
		sh.Items = append(sh.Items, Item{SKU: it.GetSku(), Qty: it.GetQty()})
	}
	out, err := g.svc.CreateShipment(ctx, sh)
	if err != nil {
		return nil, apperr.Status(err)
	}
	return toProto(out), nil
}

func (g grpcServer) GetShipment(ctx context.Context, req *shippingv1.GetShipmentRequest) (*shippingv1.Shipment, error) {
	sh, err := g.svc.GetShipment(ctx, req.GetShipmentId())
	if err != nil {
		return nil, apperr.Status(err)
	}
	return toProto(sh), nil
}

func (g grpcServer) EstimateDelivery(ctx context.Context, req *shippingv1.EstimateDeliveryRequest) (*shippingv1.DeliveryEstimate, error) {
	items := make([]Item, len(req.GetItems()))
	for i, it := range req.GetItems() {
		items[i] = Item{SKU: it.GetSku(), Qty: it.GetQty()}
	}
	e, err := g.svc.EstimateDelivery(ctx, req.GetAddress(), items)
	if err != nil {
		return nil, apperr.Status(err)
	}
	return &shippingv1.DeliveryEstimate{MinBusinessDays: e.MinBusinessDays, MaxBusinessDays: e.MaxBusinessDays}, nil
}
