package orders_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/services/orders"
)

// The fakes below share one call log, so a test can check the order in
// which the service called its dependencies. Each one also records what
// the context looked like when it was called: bookkeeping must work even
// after the request's context has ended.

type callLog []string

type ctxKey struct{}

// ctxSeen is what a dependency saw of its context.
type ctxSeen struct {
	err         error
	hasDeadline bool
	deadlineIn  time.Duration
	value       any
}

func see(ctx context.Context) ctxSeen {
	dl, ok := ctx.Deadline()
	var in time.Duration
	if ok {
		in = time.Until(dl)
	}
	return ctxSeen{err: ctx.Err(), hasDeadline: ok, deadlineIn: in, value: ctx.Value(ctxKey{})}
}

type fakeStore struct {
	log       *callLog
	orders    map[string]orders.Order
	createErr error
	updates   []orders.Order
	updateCtx []ctxSeen
}

var _ orders.Store = (*fakeStore)(nil)

func (s *fakeStore) Create(ctx context.Context, o orders.Order) error {
	*s.log = append(*s.log, "store.Create")
	if s.createErr != nil {
		return s.createErr
	}
	s.orders[o.ID] = o
	return nil
}

func (s *fakeStore) Update(ctx context.Context, o orders.Order) error {
	*s.log = append(*s.log, "store.Update:"+o.Status)
	s.updates = append(s.updates, o)
	s.updateCtx = append(s.updateCtx, see(ctx))
	s.orders[o.ID] = o
	return nil
}

func (s *fakeStore) Get(ctx context.Context, id string) (orders.Order, error) {
	o, ok := s.orders[id]
	if !ok {
		return orders.Order{}, apperr.New(apperr.NotFound, "unknown order %q", id)
	}
	return o, nil
}

type fakeCatalog struct {
	log        *callLog
	reserveErr error
	releaseErr error
	reservedBy []string // order IDs
	released   []string // reservation IDs
	releaseCtx []ctxSeen
}

var _ orders.Catalog = (*fakeCatalog)(nil)

func (c *fakeCatalog) Reserve(ctx context.Context, orderID string, items []orders.Item) (orders.Reservation, error) {
	*c.log = append(*c.log, "catalog.Reserve")
	c.reservedBy = append(c.reservedBy, orderID)
	if c.reserveErr != nil {
		return orders.Reservation{}, c.reserveErr
	}
	r := orders.Reservation{ID: "res-1"}
	for _, it := range items {
		it.UnitPriceCents = 1250
		r.Items = append(r.Items, it)
		r.TotalCents += it.Qty * it.UnitPriceCents
	}
	return r, nil
}

func (c *fakeCatalog) Release(ctx context.Context, reservationID string) error {
	*c.log = append(*c.log, "catalog.Release")
	c.released = append(c.released, reservationID)
	c.releaseCtx = append(c.releaseCtx, see(ctx))
	return c.releaseErr
}

type fakePayments struct {
	log        *callLog
	err        error
	charged    []orders.Order
	requestIDs []string
	// during runs inside Charge, to end the request's context mid-call.
	during func()
}

var _ orders.Payments = (*fakePayments)(nil)

func (p *fakePayments) Charge(ctx context.Context, o orders.Order, requestID string) (string, error) {
	*p.log = append(*p.log, "payments.Charge")
	p.charged = append(p.charged, o)
	p.requestIDs = append(p.requestIDs, requestID)
	if p.during != nil {
		p.during()
	}
	if p.err != nil {
		return "", p.err
	}
	return "ch-1", nil
}

type fakeShipping struct {
	log     *callLog
	err     error
	shipped []orders.Order
	during  func()
}

var _ orders.Shipping = (*fakeShipping)(nil)

func (s *fakeShipping) Ship(ctx context.Context, o orders.Order) (string, error) {
	*s.log = append(*s.log, "shipping.Ship")
	s.shipped = append(s.shipped, o)
	if s.during != nil {
		s.during()
	}
	if s.err != nil {
		return "", s.err
	}
	return "shp-1", nil
}

// shop is a Service over fakes.
type shop struct {
	svc      *orders.Service
	log      *callLog
	store    *fakeStore
	catalog  *fakeCatalog
	payments *fakePayments
	shipping *fakeShipping
	logs     *bytes.Buffer
}

func newShop(t *testing.T) *shop {
	t.Helper()
	log := &callLog{}
	s := &shop{
		log:      log,
		store:    &fakeStore{log: log, orders: map[string]orders.Order{}},
		catalog:  &fakeCatalog{log: log},
		payments: &fakePayments{log: log},
		shipping: &fakeShipping{log: log},
		logs:     &bytes.Buffer{},
	}
	svc, err := orders.NewService(s.store, s.catalog, s.payments, s.shipping, slog.New(slog.NewJSONHandler(s.logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s.svc = svc
	return s
}

func request() orders.PlaceRequest {
	return orders.PlaceRequest{
		Customer: "ada", Address: "1 Loop Rd",
		Items:          []orders.Item{{SKU: "tea-sencha", Qty: 2}, {SKU: "mug-stoneware", Qty: 1}},
		IdempotencyKey: "key-1", RequestID: "req-1",
	}
}

func codeOf(err error) apperr.Code {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestNewServiceRequiresDependencies(t *testing.T) {
	log := &callLog{}
	store, cat, pay, ship := &fakeStore{log: log}, &fakeCatalog{log: log}, &fakePayments{log: log}, &fakeShipping{log: log}
	logger := slog.New(slog.DiscardHandler)
	tests := []struct {
		name string
		make func() (*orders.Service, error)
	}{
		{"no store", func() (*orders.Service, error) { return orders.NewService(nil, cat, pay, ship, logger) }},
		{"no catalog", func() (*orders.Service, error) { return orders.NewService(store, nil, pay, ship, logger) }},
		{"no payments", func() (*orders.Service, error) { return orders.NewService(store, cat, nil, ship, logger) }},
		{"no shipping", func() (*orders.Service, error) { return orders.NewService(store, cat, pay, nil, logger) }},
		{"no logger", func() (*orders.Service, error) { return orders.NewService(store, cat, pay, ship, nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if svc, err := tt.make(); err == nil {
				t.Errorf("NewService = %v, want an error", svc)
			}
		})
	}
}

func TestPlaceOrder(t *testing.T) {
	s := newShop(t)
	before := time.Now()
	o, err := s.svc.PlaceOrder(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}

	want := callLog{"store.Create", "catalog.Reserve", "payments.Charge", "shipping.Ship", "store.Update:confirmed"}
	if !slices.Equal(*s.log, want) {
		t.Errorf("calls = %q, want %q", *s.log, want)
	}
	if !strings.HasPrefix(o.ID, "ord_") || o.Status != orders.StatusConfirmed || o.Customer != "ada" || o.Address != "1 Loop Rd" {
		t.Errorf("order = %+v", o)
	}
	if o.ReservationID != "res-1" || o.ChargeID != "ch-1" || o.ShipmentID != "shp-1" || o.Failure != "" {
		t.Errorf("order references = %+v", o)
	}
	// Prices come from the reservation, not the request.
	wantItems := []orders.Item{{SKU: "tea-sencha", Qty: 2, UnitPriceCents: 1250}, {SKU: "mug-stoneware", Qty: 1, UnitPriceCents: 1250}}
	if !slices.Equal(o.Items, wantItems) || o.TotalCents != 3*1250 {
		t.Errorf("items = %+v total %d, want %+v total %d", o.Items, o.TotalCents, wantItems, 3*1250)
	}
	if o.CreatedAt.Before(before) || o.CreatedAt.After(time.Now()) {
		t.Errorf("CreatedAt = %v, not during the call", o.CreatedAt)
	}

	// One payment key per order, derived from its ID, given to payments
	// with the priced order and the client's request ID.
	if o.PaymentKey != "pay_"+o.ID {
		t.Errorf("PaymentKey = %q, want %q", o.PaymentKey, "pay_"+o.ID)
	}
	if len(s.payments.charged) != 1 {
		t.Fatalf("payments charged %d times, want 1", len(s.payments.charged))
	}
	if c := s.payments.charged[0]; c.PaymentKey != "pay_"+o.ID || c.ID != o.ID || c.TotalCents != o.TotalCents {
		t.Errorf("payments got %+v, want key %q, order %q, total %d", c, "pay_"+o.ID, o.ID, o.TotalCents)
	}
	if s.payments.requestIDs[0] != "req-1" {
		t.Errorf("payments got request ID %q, want req-1", s.payments.requestIDs[0])
	}
	if s.catalog.reservedBy[0] != o.ID {
		t.Errorf("catalog reserved for %q, want %q", s.catalog.reservedBy[0], o.ID)
	}
	if sh := s.shipping.shipped[0]; sh.ID != o.ID || sh.Address != o.Address || sh.ChargeID != "ch-1" {
		t.Errorf("shipping got %+v", sh)
	}
	if len(s.catalog.released) != 0 {
		t.Errorf("a confirmed order released its stock: %v", s.catalog.released)
	}
	stored, err := s.svc.GetOrder(context.Background(), o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != orders.StatusConfirmed || stored.ChargeID != "ch-1" || stored.ShipmentID != "shp-1" {
		t.Errorf("stored order = %+v", stored)
	}
}

func TestPlaceOrderIDsDiffer(t *testing.T) {
	s := newShop(t)
	a, err := s.svc.PlaceOrder(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.svc.PlaceOrder(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID || a.PaymentKey == b.PaymentKey {
		t.Errorf("two orders share ID or payment key: %q/%q and %q/%q", a.ID, a.PaymentKey, b.ID, b.PaymentKey)
	}
}

// A step that fails stores the order as failed, gives reserved stock back,
// and returns the step's error with its code.
func TestPlaceOrderFailures(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(*shop, error)
		depErr      error
		wantCalls   callLog
		wantCode    codes.Code
		wantRelease bool
		wantCharge  string
		wantFailure string
	}{
		{
			name:        "catalog: unknown sku",
			setup:       func(s *shop, err error) { s.catalog.reserveErr = err },
			depErr:      status.Error(codes.NotFound, `unknown sku "nope"`),
			wantCalls:   callLog{"store.Create", "catalog.Reserve", "store.Update:failed"},
			wantCode:    codes.NotFound,
			wantFailure: `reserving stock: unknown sku "nope"`,
		},
		{
			name:        "catalog: out of stock",
			setup:       func(s *shop, err error) { s.catalog.reserveErr = err },
			depErr:      status.Error(codes.FailedPrecondition, "out of stock"),
			wantCalls:   callLog{"store.Create", "catalog.Reserve", "store.Update:failed"},
			wantCode:    codes.FailedPrecondition,
			wantFailure: "reserving stock: out of stock",
		},
		{
			name:        "payments unavailable",
			setup:       func(s *shop, err error) { s.payments.err = err },
			depErr:      status.Error(codes.Unavailable, "connection refused"),
			wantCalls:   callLog{"store.Create", "catalog.Reserve", "payments.Charge", "catalog.Release", "store.Update:failed"},
			wantCode:    codes.Unavailable,
			wantRelease: true,
			wantFailure: "charging: connection refused",
		},
		{
			name:        "payments timed out",
			setup:       func(s *shop, err error) { s.payments.err = err },
			depErr:      status.Error(codes.DeadlineExceeded, "payment provider did not answer in time"),
			wantCalls:   callLog{"store.Create", "catalog.Reserve", "payments.Charge", "catalog.Release", "store.Update:failed"},
			wantCode:    codes.DeadlineExceeded,
			wantRelease: true,
			wantFailure: "charging: payment provider did not answer in time",
		},
		{
			name:        "shipping timed out",
			setup:       func(s *shop, err error) { s.shipping.err = err },
			depErr:      status.Error(codes.DeadlineExceeded, "carrier did not answer in time"),
			wantCalls:   callLog{"store.Create", "catalog.Reserve", "payments.Charge", "shipping.Ship", "catalog.Release", "store.Update:failed"},
			wantCode:    codes.DeadlineExceeded,
			wantRelease: true,
			wantCharge:  "ch-1", // kept on the order for reconciliation
			wantFailure: "booking the shipment: carrier did not answer in time",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newShop(t)
			tt.setup(s, tt.depErr)
			o, err := s.svc.PlaceOrder(context.Background(), request())
			if err == nil {
				t.Fatal("PlaceOrder succeeded, want an error")
			}
			if !slices.Equal(*s.log, tt.wantCalls) {
				t.Errorf("calls = %q, want %q", *s.log, tt.wantCalls)
			}
			if got := apperr.GRPCCode(err); got != tt.wantCode {
				t.Errorf("GRPCCode(err) = %v, want %v (err %v)", got, tt.wantCode, err)
			}
			if !errors.Is(err, tt.depErr) {
				t.Errorf("error %v does not wrap the dependency's error", err)
			}
			if !strings.Contains(err.Error(), o.ID) {
				t.Errorf("error %q does not name the order %q", err, o.ID)
			}
			if gotRelease := slices.Equal(s.catalog.released, []string{"res-1"}); gotRelease != tt.wantRelease {
				t.Errorf("released %v, want release of res-1: %v", s.catalog.released, tt.wantRelease)
			}
			stored := s.store.orders[o.ID]
			if stored.Status != orders.StatusFailed || stored.Failure != tt.wantFailure || stored.ChargeID != tt.wantCharge {
				t.Errorf("stored order: status %q failure %q charge %q; want failed, %q, %q",
					stored.Status, stored.Failure, stored.ChargeID, tt.wantFailure, tt.wantCharge)
			}
			if o.Status != orders.StatusFailed {
				t.Errorf("returned order status = %q, want failed", o.Status)
			}
		})
	}
}

// The request's context may end while a step runs (the caller's budget ran
// out, the client left). Marking the order failed and releasing its stock
// must still happen: they run on a context without the request's
// cancellation, bounded by a timeout of their own, and keep its values.
func TestPlaceOrderBookkeepingOutlivesRequest(t *testing.T) {
	tests := []struct {
		name       string
		endRequest func(cancel context.CancelFunc) func(*shop)
		wantStatus string
		wantCalls  callLog
	}{
		{
			name: "payments fails after the caller left",
			endRequest: func(cancel context.CancelFunc) func(*shop) {
				return func(s *shop) {
					s.payments.during = cancel
					s.payments.err = status.Error(codes.Canceled, "context canceled")
				}
			},
			wantStatus: orders.StatusFailed,
			wantCalls:  callLog{"store.Create", "catalog.Reserve", "payments.Charge", "catalog.Release", "store.Update:failed"},
		},
		{
			name: "shipping fails after the caller left",
			endRequest: func(cancel context.CancelFunc) func(*shop) {
				return func(s *shop) {
					s.shipping.during = cancel
					s.shipping.err = status.Error(codes.DeadlineExceeded, "budget exhausted")
				}
			},
			wantStatus: orders.StatusFailed,
			wantCalls:  callLog{"store.Create", "catalog.Reserve", "payments.Charge", "shipping.Ship", "catalog.Release", "store.Update:failed"},
		},
		{
			name: "shipping succeeds just as the caller leaves",
			endRequest: func(cancel context.CancelFunc) func(*shop) {
				return func(s *shop) { s.shipping.during = cancel }
			},
			wantStatus: orders.StatusConfirmed,
			wantCalls:  callLog{"store.Create", "catalog.Reserve", "payments.Charge", "shipping.Ship", "store.Update:confirmed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newShop(t)
			ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "trace-1"), time.Hour)
			defer cancel()
			tt.endRequest(cancel)(s)

			_, _ = s.svc.PlaceOrder(ctx, request())
			if ctx.Err() == nil {
				t.Fatal("test bug: the request's context did not end")
			}
			if !slices.Equal(*s.log, tt.wantCalls) {
				t.Errorf("calls = %q, want %q", *s.log, tt.wantCalls)
			}
			seen := slices.Concat(s.catalog.releaseCtx, s.store.updateCtx)
			if len(seen) == 0 {
				t.Fatal("no bookkeeping call was made")
			}
			for i, c := range seen {
				if c.err != nil {
					t.Errorf("bookkeeping call %d ran on an ended context: %v", i, c.err)
				}
				if !c.hasDeadline || c.deadlineIn <= 0 || c.deadlineIn > 2*time.Second {
					t.Errorf("bookkeeping call %d: deadline in %v (has one: %v), want a bound of its own within 2s", i, c.deadlineIn, c.hasDeadline)
				}
				if c.value != "trace-1" {
					t.Errorf("bookkeeping call %d lost the request's values (got %v)", i, c.value)
				}
			}
			if got := s.store.updates[len(s.store.updates)-1].Status; got != tt.wantStatus {
				t.Errorf("stored status = %q, want %q", got, tt.wantStatus)
			}
		})
	}
}

// A failed release is logged, and the order is still recorded as failed.
func TestPlaceOrderReleaseFails(t *testing.T) {
	s := newShop(t)
	s.payments.err = status.Error(codes.Unavailable, "down")
	s.catalog.releaseErr = status.Error(codes.Unavailable, "catalog down too")
	o, err := s.svc.PlaceOrder(context.Background(), request())
	if apperr.GRPCCode(err) != codes.Unavailable {
		t.Errorf("error = %v, want the payment failure (Unavailable)", err)
	}
	if s.store.orders[o.ID].Status != orders.StatusFailed {
		t.Errorf("stored status = %q, want failed", s.store.orders[o.ID].Status)
	}
	if !strings.Contains(s.logs.String(), "releasing stock") || !strings.Contains(s.logs.String(), o.ID) {
		t.Errorf("the failed release was not logged with the order ID; logs: %s", s.logs)
	}
}

func TestPlaceOrderStoreCreateFails(t *testing.T) {
	s := newShop(t)
	s.store.createErr = apperr.New(apperr.Unavailable, "database down")
	_, err := s.svc.PlaceOrder(context.Background(), request())
	if codeOf(err) != apperr.Unavailable {
		t.Errorf("error = %v, want the store's Unavailable", err)
	}
	if want := (callLog{"store.Create"}); !slices.Equal(*s.log, want) {
		t.Errorf("calls = %q, want %q: nothing runs for an order that was not stored", *s.log, want)
	}
}

func TestPlaceOrderValidation(t *testing.T) {
	long := strings.Repeat("x", orders.MaxTextBytes+1)
	items := func(n int) []orders.Item {
		out := make([]orders.Item, n)
		for i := range out {
			out[i] = orders.Item{SKU: "tea-sencha", Qty: 1}
		}
		return out
	}
	tests := []struct {
		name   string
		change func(*orders.PlaceRequest)
		want   string // "" when valid
	}{
		{"valid", func(*orders.PlaceRequest) {}, ""},
		{"longest customer and address", func(r *orders.PlaceRequest) { r.Customer, r.Address = long[1:], long[1:] }, ""},
		{"most items and qty", func(r *orders.PlaceRequest) { r.Items = items(orders.MaxItems); r.Items[0].Qty = orders.MaxQty }, ""},
		{"no customer", func(r *orders.PlaceRequest) { r.Customer = "" }, "customer"},
		{"customer too long", func(r *orders.PlaceRequest) { r.Customer = long }, "customer"},
		{"no address", func(r *orders.PlaceRequest) { r.Address = "" }, "address"},
		{"address too long", func(r *orders.PlaceRequest) { r.Address = long }, "address"},
		{"no items", func(r *orders.PlaceRequest) { r.Items = nil }, "got 0"},
		{"51 items", func(r *orders.PlaceRequest) { r.Items = items(51) }, "got 51"},
		{"item without sku", func(r *orders.PlaceRequest) { r.Items[1].SKU = "" }, "items[1].sku"},
		{"qty 0", func(r *orders.PlaceRequest) { r.Items[0].Qty = 0 }, "items[0].qty"},
		{"negative qty", func(r *orders.PlaceRequest) { r.Items[0].Qty = -3 }, "got -3"},
		{"qty 1001", func(r *orders.PlaceRequest) { r.Items[0].Qty = 1001 }, "got 1001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newShop(t)
			req := request()
			tt.change(&req)
			if err := req.Validate(); (err == nil) != (tt.want == "") {
				t.Errorf("Validate() = %v, want error %v", err, tt.want != "")
			}
			_, err := s.svc.PlaceOrder(context.Background(), req)
			if tt.want == "" {
				if err != nil {
					t.Errorf("PlaceOrder = %v, want success", err)
				}
				return
			}
			if codeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("PlaceOrder error = %v, want code %q containing %q", err, apperr.Invalid, tt.want)
			}
			if len(*s.log) != 0 {
				t.Errorf("an invalid request reached %q", *s.log)
			}
		})
	}
}

func TestGetOrder(t *testing.T) {
	svc, err := orders.NewService(orders.NewMemStore(), &fakeCatalog{log: &callLog{}}, &fakePayments{log: &callLog{}},
		&fakeShipping{log: &callLog{}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	placed, err := svc.PlaceOrder(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		id   string
		want apperr.Code
	}{
		{"found", placed.ID, ""},
		{"unknown", "ord_0000000000000000", apperr.NotFound},
		{"empty", "", apperr.Invalid},
		{"over 64 bytes", strings.Repeat("o", 65), apperr.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := svc.GetOrder(context.Background(), tt.id)
			if codeOf(err) != tt.want {
				t.Fatalf("GetOrder(%q) error = %v, want code %q", tt.id, err, tt.want)
			}
			if err == nil && (got.ID != placed.ID || got.Status != orders.StatusConfirmed || !got.CreatedAt.Equal(placed.CreatedAt)) {
				t.Errorf("GetOrder = %+v, want %+v", got, placed)
			}
		})
	}
}

// The memory store hands out copies: a caller changing an order's items
// does not change the stored order.
func TestMemStoreCopies(t *testing.T) {
	ctx := context.Background()
	s := orders.NewMemStore()
	o := orders.Order{ID: "ord_1", Status: orders.StatusPending, Items: []orders.Item{{SKU: "tea", Qty: 1}}}
	if err := s.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	o.Items[0].Qty = 99
	got, err := s.Get(ctx, "ord_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Items[0].Qty != 1 {
		t.Errorf("stored qty = %d after the caller changed its slice, want 1", got.Items[0].Qty)
	}
	got.Items[0].Qty = 42
	if again, _ := s.Get(ctx, "ord_1"); again.Items[0].Qty != 1 {
		t.Errorf("stored qty = %d after changing a fetched copy, want 1", again.Items[0].Qty)
	}
	if err := s.Create(ctx, o); codeOf(err) != apperr.Conflict {
		t.Errorf("second Create of ord_1 = %v, want Conflict", err)
	}
	if err := s.Update(ctx, orders.Order{ID: "ord_2"}); codeOf(err) != apperr.NotFound {
		t.Errorf("Update of an unknown order = %v, want NotFound", err)
	}
}
