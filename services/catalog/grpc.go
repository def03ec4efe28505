package catalog

import (
	"context"

	"github.com/mercado-lab/mercado/internal/apperr"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
)

// grpcServer adapts Service to the CatalogService contract.
type grpcServer struct {
	catalogv1.UnimplementedCatalogServiceServer
	svc *Service
}

func toProto(p Product) *catalogv1.Product {
	return &catalogv1.Product{Sku: p.SKU, Name: p.Name, PriceCents: p.PriceCents, Stock: p.Stock}
}

func (g grpcServer) ListProducts(ctx context.Context, req *catalogv1.ListProductsRequest) (*catalogv1.ListProductsResponse, error) {
	ps, next, err := g.svc.ListProducts(ctx, int(req.GetPageSize()), req.GetPageToken())
	if err != nil {
		return nil, apperr.Status(err)
	}
	out := &catalogv1.ListProductsResponse{Products: make([]*catalogv1.Product, len(ps)), NextPageToken: next}
	for i, p := range ps {
		out.Products[i] = toProto(p)
	}
	return out, nil
}

func (g grpcServer) GetProduct(ctx context.Context, req *catalogv1.GetProductRequest) (*catalogv1.Product, error) {
	p, err := g.svc.GetProduct(ctx, req.GetSku())
	if err != nil {
		return nil, apperr.Status(err)
	}
	return toProto(p), nil
}

func (g grpcServer) ReserveStock(ctx context.Context, req *catalogv1.ReserveStockRequest) (*catalogv1.Reservation, error) {
	lines := make([]Line, len(req.GetLines()))
	for i, l := range req.GetLines() {
		lines[i] = Line{SKU: l.GetSku(), Qty: l.GetQty()}
	}
	r, err := g.svc.ReserveStock(ctx, req.GetOrderId(), lines)
	if err != nil {
		return nil, apperr.Status(err)
	}
	out := &catalogv1.Reservation{ReservationId: r.ID, OrderId: r.OrderID, TotalCents: r.TotalCents}
	for _, l := range r.Lines {
		out.Lines = append(out.Lines, &catalogv1.PricedLine{Sku: l.SKU, Qty: l.Qty, UnitPriceCents: l.UnitPriceCents})
	}
	return out, nil
}

func (g grpcServer) ReleaseStock(ctx context.Context, req *catalogv1.ReleaseStockRequest) (*catalogv1.ReleaseStockResponse, error) {
	if err := g.svc.ReleaseStock(ctx, req.GetReservationId()); err != nil {
		return nil, apperr.Status(err)
	}
	return &catalogv1.ReleaseStockResponse{}, nil
}

func (g grpcServer) ExportCatalog(ctx context.Context, req *catalogv1.ExportCatalogRequest) (*catalogv1.ExportCatalogResponse, error) {
	ps, next, err := g.svc.ExportPage(ctx, int(req.GetPageSize()), req.GetPageToken())
	if err != nil {
		return nil, apperr.Status(err)
	}
	out := &catalogv1.ExportCatalogResponse{Products: make([]*catalogv1.Product, len(ps)), NextPageToken: next}
	for i, p := range ps {
		out.Products[i] = toProto(p)
	}
	return out, nil
}
