package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/internal/telemetry"
)

// Product is something the shop sells.
type Product struct {
	SKU        string
	Name       string
	PriceCents int64
	Stock      int64
}

// Line asks for qty units of one product.
type Line struct {
	SKU string
	Qty int64
}

// PricedLine is a reserved line with the unit price at reservation time.
type PricedLine struct {
	Line
	UnitPriceCents int64
}

// Reservation holds stock for one order.
type Reservation struct {
	ID         string
	OrderID    string
	Lines      []PricedLine
	TotalCents int64
}

// Limits on a request: lines per reservation, units per line, and the
// length of an id (SKU, order id, reservation id).
const (
	MaxLines   = 50
	MaxQty     = 1000
	MaxIDBytes = 64
)

// checkID reports an id that is missing or too long to name anything.
func checkID(name, id string) error {
	switch {
	case id == "":
		return apperr.New(apperr.Invalid, "%s is required", name)
	case len(id) > MaxIDBytes:
		return apperr.New(apperr.Invalid, "%s is longer than %d characters", name, MaxIDBytes)
	}
	return nil
}

// Store keeps products and reservations. Reserve is all or nothing, never
// lets stock go negative, and holds at most one reservation per order (a
// second Reserve for the order returns the first); Release is idempotent.
type Store interface {
	// List returns up to limit products, in SKU order, after the SKU
	// after ("" for the first).
	List(ctx context.Context, after string, limit int) ([]Product, error)
	Get(ctx context.Context, sku string) (Product, error)
	// Reserve takes the stock of lines for the order, holding each
	// product's lock from taking its stock to the commit, so reservations
	// of one product wait for each other, in line. It calls locked (when
	// not nil) once it holds the locks, before it commits; an error from
	// locked leaves nothing reserved. A reservation the order had already
	// is returned without calling it.
	Reserve(ctx context.Context, orderID string, lines []Line, locked func(context.Context) error) (Reservation, error)
	Release(ctx context.Context, reservationID string) error
}

// Service is the catalog's use cases. Each one does its simulated work
// (through its sim.Simulator) before touching the store.
type Service struct {
	store    Store
	work     sim.Simulator
	lockWait metric.Float64Histogram
}

// NewService returns a Service over store, with work simulating its own,
// recording its lock waits with meter (none when nil).
func NewService(store Store, work sim.Simulator, meter metric.Meter) (*Service, error) {
	if store == nil || work == nil {
		return nil, fmt.Errorf("catalog: store and work are required")
	}
	if meter == nil {
		meter = noop.NewMeterProvider().Meter("")
	}
	lockWait, err := meter.Float64Histogram(telemetry.NameStockLockWait, metric.WithUnit("s"),
		metric.WithDescription("A reservation's wait for its products' locks, by outcome (locked, gave_up)."),
		metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets...))
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return &Service{store: store, work: work, lockWait: lockWait}, nil
}

// ListProducts returns the page of the catalogue that a shopper browses:
// size products (DefaultPageSize for 0) in SKU order after the SKU after
// ("" for the first page), and the SKU to continue after, "" on the last
// page.
func (s *Service) ListProducts(ctx context.Context, size int, after string) ([]Product, string, error) {
	return s.page(ctx, sim.CatalogListProducts, size, after)
}

// GetProduct returns one product.
func (s *Service) GetProduct(ctx context.Context, sku string) (Product, error) {
	if err := checkID("sku", sku); err != nil {
		return Product{}, err
	}
	if err := s.work.Work(ctx, sim.CatalogGetProduct); err != nil {
		return Product{}, err
	}
	return s.store.Get(ctx, sku)
}

// ReserveStock holds stock for every line of an order.
func (s *Service) ReserveStock(ctx context.Context, orderID string, lines []Line) (Reservation, error) {
	if err := validateLines(orderID, lines); err != nil {
		return Reservation{}, err
	}
	if err := s.work.Work(ctx, sim.CatalogReserveStock); err != nil {
		return Reservation{}, err
	}
	asked, held := time.Now(), false
	r, err := s.store.Reserve(ctx, orderID, lines, func(ctx context.Context) error {
		held = true
		s.lockWait.Record(ctx, time.Since(asked).Seconds(), lockedOutcome)
		// The wait counted against the budget: where the mode honours
		// cancellation, a reservation whose time ran out in line gives the
		// locks to the next one at once instead of committing for nobody.
		return s.work.Work(ctx, sim.CatalogCommit)
	})
	if !held && err != nil && (errors.Is(err, errGaveUp) || ctx.Err() != nil) {
		s.lockWait.Record(ctx, time.Since(asked).Seconds(), gaveUpOutcome)
	}
	return r, err
}

// The outcomes of a lock wait, as telemetry.NameStockLockWait's outcome
// label says them.
var (
	lockedOutcome = metric.WithAttributes(attribute.String("outcome", "locked"))
	gaveUpOutcome = metric.WithAttributes(attribute.String("outcome", "gave_up"))
)

// ReleaseStock gives a reservation's stock back.
func (s *Service) ReleaseStock(ctx context.Context, reservationID string) error {
	if err := checkID("reservation_id", reservationID); err != nil {
		return err
	}
	if err := s.work.Work(ctx, sim.CatalogReleaseStock); err != nil {
		return err
	}
	return s.store.Release(ctx, reservationID)
}

// Paging, for a listing and an export: a page holds 1 to MaxPageSize
// products, DefaultPageSize when the caller asks for none.
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
)

// ExportPage returns a page of the whole catalogue as ListProducts does,
// for an export sent as batch traffic. Every page costs its own simulated
// work (sim.CatalogExportCatalog) on the catalog's workers, so an export
// competes with browsing and reservations for them.
func (s *Service) ExportPage(ctx context.Context, size int, after string) ([]Product, string, error) {
	return s.page(ctx, sim.CatalogExportCatalog, size, after)
}

// page reads one page after doing the method's simulated work.
func (s *Service) page(ctx context.Context, method string, size int, after string) ([]Product, string, error) {
	switch {
	case size == 0:
		size = DefaultPageSize
	case size < 0 || size > MaxPageSize:
		return nil, "", apperr.New(apperr.Invalid, "page_size must be 1 to %d, got %d", MaxPageSize, size)
	}
	if len(after) > MaxIDBytes {
		return nil, "", apperr.New(apperr.Invalid, "page_token is longer than %d characters", MaxIDBytes)
	}
	if err := s.work.Work(ctx, method); err != nil {
		return nil, "", err
	}
	// One more than the page holds tells whether another page follows.
	page, err := s.store.List(ctx, after, size+1)
	if err != nil {
		return nil, "", err
	}
	if len(page) <= size {
		return page, "", nil
	}
	page = page[:size]
	return page, page[size-1].SKU, nil
}

func validateLines(orderID string, lines []Line) error {
	if err := checkID("order_id", orderID); err != nil {
		return err
	}
	if len(lines) == 0 || len(lines) > MaxLines {
		return apperr.New(apperr.Invalid, "an order needs 1 to %d lines, got %d", MaxLines, len(lines))
	}
	for i, l := range lines {
		if err := checkID(fmt.Sprintf("lines[%d].sku", i), l.SKU); err != nil {
			return err
		}
		if l.Qty < 1 || l.Qty > MaxQty {
			return apperr.New(apperr.Invalid, "lines[%d].qty must be 1 to %d, got %d", i, MaxQty, l.Qty)
		}
	}
	return nil
}
