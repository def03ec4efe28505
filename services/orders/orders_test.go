package orders_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/services/orders"
)

// The fakes below share one call log, so a test can check the order in
// which the service called its dependencies. Each one also records what
// the context looked like when it was called: bookkeeping must work even
// after the request's context has ended. They are safe for concurrent use:
// some tests run two checkouts at once.

type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
}

// get returns the calls made so far.
func (l *callLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// reset forgets the calls made so far.
func (l *callLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = nil
}

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
	mu        sync.Mutex
	orders    map[string]orders.Order
	createErr error
	updates   []orders.Order
	updateCtx []ctxSeen
}

var _ orders.Store = (*fakeStore)(nil)

func (s *fakeStore) Create(ctx context.Context, o orders.Order) error {
	s.log.add("store.Create")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.createErr != nil {
		return s.createErr
	}
	s.orders[o.ID] = o
	return nil
}

func (s *fakeStore) Update(ctx context.Context, o orders.Order) error {
	s.log.add("store.Update:" + string(o.Status))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates = append(s.updates, o)
	s.updateCtx = append(s.updateCtx, see(ctx))
	s.orders[o.ID] = o
	return nil
}

func (s *fakeStore) Get(ctx context.Context, id string) (orders.Order, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orders[id]
	if !ok {
		return orders.Order{}, apperr.New(apperr.NotFound, "unknown order %q", id)
	}
	return o, nil
}

func (s *fakeStore) List(ctx context.Context, f orders.Filter) ([]orders.Order, error) {
	s.log.add("store.List")
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []orders.Order
	for _, o := range s.orders {
		if o.Status == f.Status && (f.ShipmentStatus == "" || o.ShipmentStatus == f.ShipmentStatus) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (s *fakeStore) ByIdempotencyKey(ctx context.Context, key string) ([]orders.Order, error) {
	s.log.add("store.ByIdempotencyKey")
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []orders.Order
	for _, o := range s.orders {
		if key != "" && o.IdempotencyKey == key {
			out = append(out, o)
		}
	}
	return out, nil
}

// all returns every stored order.

func (s *fakeStore) all() []orders.Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []orders.Order
	for _, o := range s.orders {
		out = append(out, o)
	}
	return out
}

// fakeKeys is the real in-memory key store, with its calls logged and the
// context of its bookkeeping calls (Complete, Release) recorded. Its
// orders are written by the store it was made with, which logs them: a
// claim with its order is logged "keys.Claim", "store.Create", and an
// outcome with its answer "store.Update:…", "keys.Complete".
type fakeKeys struct {
	log      *callLog
	keys     *orders.MemKeys
	claimErr error

	mu  sync.Mutex
	ctx []ctxSeen
}

var _ orders.Keys = (*fakeKeys)(nil)

func (k *fakeKeys) ClaimWithOrder(ctx context.Context, key, hash string, now, leaseUntil time.Time, o orders.Order) (orders.KeyRecord, bool, error) {
	k.log.add("keys.Claim")
	if k.claimErr != nil {
		return orders.KeyRecord{}, false, k.claimErr
	}
	return k.keys.ClaimWithOrder(ctx, key, hash, now, leaseUntil, o)
}

func (k *fakeKeys) CompleteWithOrder(ctx context.Context, o orders.Order, key string, response []byte) (bool, error) {
	answered, err := k.keys.CompleteWithOrder(ctx, o, key, response)
	if err == nil {
		k.log.add("keys.Complete")
		k.seen(ctx)
	}
	return answered, err
}

func (k *fakeKeys) Complete(ctx context.Context, key string, response []byte) error {
	k.log.add("keys.Complete")
	k.seen(ctx)
	return k.keys.Complete(ctx, key, response)
}

func (k *fakeKeys) Release(ctx context.Context, key string) error {
	k.log.add("keys.Release")
	k.seen(ctx)
	return k.keys.Release(ctx, key)
}

func (k *fakeKeys) Reap(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	k.log.add("keys.Reap")
	return k.keys.Reap(ctx, cutoff, limit)
}

func (k *fakeKeys) seen(ctx context.Context) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ctx = append(k.ctx, see(ctx))
}

type fakeCatalog struct {
	log *callLog
	// delay, when set, is how long Reserve takes, unless its context ends
	// first.
	delay      time.Duration
	mu         sync.Mutex
	reserveCtx []ctxSeen
	reserveAt  []time.Time
	reserveErr error
	releaseErr error
	reservedBy []string // order IDs
	released   []string // reservation IDs
	releaseCtx []ctxSeen
}

var _ orders.Catalog = (*fakeCatalog)(nil)

func (c *fakeCatalog) Reserve(ctx context.Context, orderID string, items []orders.Item) (orders.Reservation, error) {
	c.log.add("catalog.Reserve")
	c.mu.Lock()
	c.reserveCtx, c.reserveAt = append(c.reserveCtx, see(ctx)), append(c.reserveAt, time.Now())
	c.mu.Unlock()
	if err := wait(ctx, c.delay); err != nil {
		return orders.Reservation{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
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
	c.log.add("catalog.Release")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released = append(c.released, reservationID)
	c.releaseCtx = append(c.releaseCtx, see(ctx))
	return c.releaseErr
}

func (c *fakeCatalog) releases() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.released)
}

// wait takes d, or until ctx ends; a cut wait answers as a gRPC call
// would, with the status of ctx's end.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// fakeFraud approves every order unless told to decline or fail, after
// delay (cut short when its context ends). It keeps out of the shared
// call log: in parallel mode its call would race catalog's for a place
// in it, and the tests that read the log check the chain's other steps.
type fakeFraud struct {
	delay   time.Duration
	decline bool
	err     error

	mu       sync.Mutex
	screened []string // order IDs
	seen     []ctxSeen
	at       []time.Time
}

var _ orders.Fraud = (*fakeFraud)(nil)

func (f *fakeFraud) Screen(ctx context.Context, o orders.Order) (orders.Screening, error) {
	f.mu.Lock()
	f.screened, f.seen, f.at = append(f.screened, o.ID), append(f.seen, see(ctx)), append(f.at, time.Now())
	f.mu.Unlock()
	if err := wait(ctx, f.delay); err != nil {
		return orders.Screening{}, err
	}
	if f.err != nil {
		return orders.Screening{}, f.err
	}
	if f.decline {
		return orders.Screening{Score: 90}, nil
	}
	return orders.Screening{Approved: true, Score: 2}, nil
}

// fakePayments answers Charge with chargeStatus (succeeded when empty) or
// err, and the reconciler's Get and Void with what the test set.
type fakePayments struct {
	log *callLog

	mu           sync.Mutex
	err          error
	chargeStatus orders.ChargeStatus
	charged      []orders.Order
	// during runs inside Charge, to end the request's context mid-call.
	during func()
	// entered, when set, is sent to when Charge starts; Charge then waits
	// for release to close.
	entered chan<- struct{}
	release <-chan struct{}

	got     orders.Charge
	getErr  error
	gets    []string
	voided  orders.Charge
	voidErr error
	voids   []string
}

var _ orders.Payments = (*fakePayments)(nil)

func (p *fakePayments) Charge(ctx context.Context, o orders.Order) (orders.Charge, error) {
	p.log.add("payments.Charge")
	p.mu.Lock()
	p.charged = append(p.charged, o)
	during, entered, release := p.during, p.entered, p.release
	p.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
		<-release
	}
	if during != nil {
		during()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return orders.Charge{}, p.err
	}
	st := p.chargeStatus
	if st == "" {
		st = "succeeded"
	}
	return orders.Charge{ID: "ch-1", Status: st}, nil
}

func (p *fakePayments) Get(ctx context.Context, key string) (orders.Charge, error) {
	p.log.add("payments.Get")
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gets = append(p.gets, key)
	return p.got, p.getErr
}

func (p *fakePayments) Void(ctx context.Context, key string) (orders.Charge, error) {
	p.log.add("payments.Void")
	p.mu.Lock()
	defer p.mu.Unlock()
	p.voids = append(p.voids, key)
	return p.voided, p.voidErr
}

// set changes the fake under its lock, for tests whose checkouts or
// workers run on other goroutines.
func (p *fakePayments) set(f func(p *fakePayments)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *fakePayments) charges() []orders.Order {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.charged)
}

type fakeShipping struct {
	log     *callLog
	mu      sync.Mutex
	err     error
	shipped []orders.Order
	during  func()

	estimates     int
	estimateErr   error
	estimateDelay time.Duration
}

// fakeAudit is payments' audit trail: it keeps one event per order, and
// answers err while it is set.
type fakeAudit struct {
	mu sync.Mutex
	// attempts counts the calls, batches the events each batch carried.
	attempts int
	batches  []int
	err      error
	// refuse, when set, refuses the events it returns an error for, one
	// by one; the rest of their batch is recorded.
	refuse   func(orders.AuditEvent) error
	recorded map[string]orders.AuditEvent
	// delay, when set, is waited (or ctx's end) before answering.
	delay time.Duration
	// lose, when set, loses the answer to the next call after its events
	// are recorded: the call fails with lose, then lose is cleared.
	lose error
}

var _ orders.Audit = (*fakeAudit)(nil)

func (a *fakeAudit) Record(ctx context.Context, e orders.AuditEvent) error {
	refused, err := a.write(ctx, []orders.AuditEvent{e})
	if err != nil {
		return err
	}
	return refused[0]
}

func (a *fakeAudit) RecordBatch(ctx context.Context, events []orders.AuditEvent) ([]error, error) {
	a.mu.Lock()
	a.batches = append(a.batches, len(events))
	a.mu.Unlock()
	return a.write(ctx, events)
}

// write is one call of either kind.
func (a *fakeAudit) write(ctx context.Context, events []orders.AuditEvent) ([]error, error) {
	a.mu.Lock()
	a.attempts++
	err, delay := a.err, a.delay
	a.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.recorded == nil {
		a.recorded = map[string]orders.AuditEvent{}
	}
	refused := make([]error, len(events))
	for i, e := range events {
		if a.refuse != nil {
			if refused[i] = a.refuse(e); refused[i] != nil {
				continue
			}
		}
		if _, ok := a.recorded[e.OrderID]; !ok {
			a.recorded[e.OrderID] = e
		}
	}
	if lost := a.lose; lost != nil {
		a.lose = nil
		return nil, lost
	}
	return refused, nil
}

func (a *fakeAudit) set(f func(a *fakeAudit)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

func (a *fakeAudit) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.recorded)
}

var _ orders.Shipping = (*fakeShipping)(nil)

func (s *fakeShipping) Ship(ctx context.Context, o orders.Order) (string, error) {
	s.log.add("shipping.Ship")
	s.mu.Lock()
	s.shipped = append(s.shipped, o)
	during, err := s.during, s.err
	s.mu.Unlock()
	if during != nil {
		during()
	}
	if err != nil {
		return "", err
	}
	return "shp-1", nil
}

// Estimate answers the quote, or estimateErr; a quote never enters the
// call log, since it runs beside the chain and its place in the log would
// be a race. estimateDelay, when set, is waited (or ctx's end) first.
func (s *fakeShipping) Estimate(ctx context.Context, o orders.Order) (orders.DeliveryEstimate, error) {
	s.mu.Lock()
	s.estimates++
	err, delay := s.estimateErr, s.estimateDelay
	s.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return orders.DeliveryEstimate{}, ctx.Err()
		}
	}
	if err != nil {
		return orders.DeliveryEstimate{}, err
	}
	return orders.DeliveryEstimate{MinBusinessDays: 1, MaxBusinessDays: 2}, nil
}

func (s *fakeShipping) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func settingsOf(m mode.Mode) mode.Settings {
	return mode.Settings{Mode: m, Mechanisms: m.Mechanisms()}
}

// shop is a Service over fakes, in budgeted mode (idempotency on) unless
// the test stores other settings.
type shop struct {
	svc      *orders.Service
	log      *callLog
	store    *fakeStore
	keys     *fakeKeys
	catalog  *fakeCatalog
	payments *fakePayments
	fraud    *fakeFraud
	shipping *fakeShipping
	audit    *fakeAudit
	settings *mode.Live
	logs     *syncBuffer
}

// syncBuffer is a bytes.Buffer for a logger written from several
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func newShop(t *testing.T) *shop {
	t.Helper()
	log := &callLog{}
	store := &fakeStore{log: log, orders: map[string]orders.Order{}}
	s := &shop{
		log:      log,
		store:    store,
		keys:     &fakeKeys{log: log, keys: orders.NewMemKeys(store)},
		catalog:  &fakeCatalog{log: log},
		payments: &fakePayments{log: log},
		fraud:    &fakeFraud{},
		shipping: &fakeShipping{log: log},
		audit:    &fakeAudit{},
		settings: mode.NewLive(settingsOf(mode.Budgeted)),
		logs:     &syncBuffer{},
	}
	svc, err := orders.NewService(orders.Deps{
		Store: s.store, Keys: s.keys, Catalog: s.catalog, Payments: s.payments, Fraud: s.fraud, Shipping: s.shipping, Audit: s.audit,
		Settings: s.settings, Log: slog.New(slog.NewJSONHandler(s.logs, nil)),
	})
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
	store := &fakeStore{log: log}
	full := orders.Deps{
		Store: store, Keys: orders.NewMemKeys(store), Catalog: &fakeCatalog{log: log},
		Payments: &fakePayments{log: log}, Fraud: &fakeFraud{}, Shipping: &fakeShipping{log: log}, Audit: &fakeAudit{},
		Settings: mode.NewLive(settingsOf(mode.Budgeted)), Log: slog.New(slog.DiscardHandler),
	}
	tests := []struct {
		name string
		drop func(*orders.Deps)
	}{
		{"no store", func(d *orders.Deps) { d.Store = nil }},
		{"no keys", func(d *orders.Deps) { d.Keys = nil }},
		{"no catalog", func(d *orders.Deps) { d.Catalog = nil }},
		{"no payments", func(d *orders.Deps) { d.Payments = nil }},
		{"no fraud screen", func(d *orders.Deps) { d.Fraud = nil }},
		{"no shipping", func(d *orders.Deps) { d.Shipping = nil }},
		{"no audit", func(d *orders.Deps) { d.Audit = nil }},
		{"no settings", func(d *orders.Deps) { d.Settings = nil }},
		{"no logger", func(d *orders.Deps) { d.Log = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := full
			tt.drop(&d)
			if svc, err := orders.NewService(d); err == nil {
				t.Errorf("NewService = %v, want an error", svc)
			}
		})
	}
	if _, err := orders.NewService(full); err != nil {
		t.Errorf("NewService with every dependency = %v", err)
	}
}

func TestPlaceOrder(t *testing.T) {
	s := newShop(t)
	before := time.Now()
	o, err := s.svc.PlaceOrder(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}

	// The key is claimed before anything is done, and the answer stored
	// once the order is.
	want := []string{"keys.Claim", "store.Create", "catalog.Reserve", "payments.Charge", "shipping.Ship", "store.Update:confirmed", "keys.Complete"}
	if got := s.log.get(); !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
	if !strings.HasPrefix(o.ID, "ord_") || o.Status != orders.StatusConfirmed || o.Customer != "ada" || o.Address != "1 Loop Rd" {
		t.Errorf("order = %+v", o)
	}
	if o.ReservationID != "res-1" || o.ChargeID != "ch-1" || o.ShipmentID != "shp-1" || o.ShipmentStatus != orders.ShipmentBooked || o.Failure != "" {
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
	charged := s.payments.charges()
	if len(charged) != 1 {
		t.Fatalf("payments charged %d times, want 1", len(charged))
	}
	if c := charged[0]; c.PaymentKey != "pay_"+o.ID || c.ID != o.ID || c.TotalCents != o.TotalCents || c.RequestID != "req-1" {
		t.Errorf("payments got %+v, want key %q, order %q, total %d, request req-1", c, "pay_"+o.ID, o.ID, o.TotalCents)
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

// Two checkouts (two keys) are two orders, each with a payment key of its
// own.
func TestPlaceOrderIDsDiffer(t *testing.T) {
	s := newShop(t)
	a, err := s.svc.PlaceOrder(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	second := request()
	second.IdempotencyKey, second.RequestID = "key-2", "req-2"
	b, err := s.svc.PlaceOrder(context.Background(), second)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID || a.PaymentKey == b.PaymentKey {
		t.Errorf("two orders share ID or payment key: %q/%q and %q/%q", a.ID, a.PaymentKey, b.ID, b.PaymentKey)
	}
}

// serviceStatus is a dependency's refusal as a Mercado service sends it:
// its message is public (apperr.Status).
func serviceStatus(code codes.Code, msg string) error {
	return apperr.PublicStatus(code, msg, msg).Err()
}

// A step that fails before any money can have been taken stores the order
// as failed, gives reserved stock back, releases the idempotency key and
// returns the step's error with its code.
func TestPlaceOrderFailures(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(*shop, error)
		depErr      error
		wantCalls   []string
		wantCode    codes.Code
		wantRelease bool
		wantFailure string
	}{
		{
			name:        "catalog: unknown sku",
			setup:       func(s *shop, err error) { s.catalog.reserveErr = err },
			depErr:      serviceStatus(codes.NotFound, `unknown sku "nope"`),
			wantCalls:   []string{"keys.Claim", "store.Create", "catalog.Reserve", "store.Update:failed", "keys.Release"},
			wantCode:    codes.NotFound,
			wantFailure: `reserving stock: unknown sku "nope"`,
		},
		{
			name:        "catalog: out of stock",
			setup:       func(s *shop, err error) { s.catalog.reserveErr = err },
			depErr:      serviceStatus(codes.FailedPrecondition, "out of stock"),
			wantCalls:   []string{"keys.Claim", "store.Create", "catalog.Reserve", "store.Update:failed", "keys.Release"},
			wantCode:    codes.FailedPrecondition,
			wantFailure: "reserving stock: out of stock",
		},
		{
			name:        "payments: declined",
			setup:       func(s *shop, _ error) { s.payments.chargeStatus = "failed" },
			wantCalls:   []string{"keys.Claim", "store.Create", "catalog.Reserve", "payments.Charge", "catalog.Release", "store.Update:failed", "keys.Release"},
			wantCode:    codes.FailedPrecondition,
			wantRelease: true,
			wantFailure: "charging: the payment was declined",
		},
		{
			name:        "payments: refused the request",
			setup:       func(s *shop, err error) { s.payments.err = err },
			depErr:      serviceStatus(codes.InvalidArgument, "amount_cents must be positive"),
			wantCalls:   []string{"keys.Claim", "store.Create", "catalog.Reserve", "payments.Charge", "catalog.Release", "store.Update:failed", "keys.Release"},
			wantCode:    codes.InvalidArgument,
			wantRelease: true,
			wantFailure: "charging: amount_cents must be positive",
		},
		{
			// A full bulkhead is orders' own refusal: the call was never
			// made, so nothing was charged.
			name:        "payments: bulkhead full",
			setup:       func(s *shop, err error) { s.payments.err = err },
			depErr:      serviceStatus(codes.ResourceExhausted, `payments: bulkhead "to.payments" full`),
			wantCalls:   []string{"keys.Claim", "store.Create", "catalog.Reserve", "payments.Charge", "catalog.Release", "store.Update:failed", "keys.Release"},
			wantCode:    codes.Unavailable,
			wantRelease: true,
			wantFailure: `charging: payments: bulkhead "to.payments" full`,
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
			if got := s.log.get(); !slices.Equal(got, tt.wantCalls) {
				t.Errorf("calls = %q, want %q", got, tt.wantCalls)
			}
			if got := apperr.GRPCCode(err); got != tt.wantCode {
				t.Errorf("GRPCCode(err) = %v, want %v (err %v)", got, tt.wantCode, err)
			}
			if tt.depErr != nil && !errors.Is(err, tt.depErr) {
				t.Errorf("error %v does not wrap the dependency's error", err)
			}
			if !strings.Contains(err.Error(), o.ID) {
				t.Errorf("error %q does not name the order %q", err, o.ID)
			}
			if gotRelease := slices.Equal(s.catalog.released, []string{"res-1"}); gotRelease != tt.wantRelease {
				t.Errorf("released %v, want release of res-1: %v", s.catalog.released, tt.wantRelease)
			}
			stored := s.store.orders[o.ID]
			if stored.Status != orders.StatusFailed || stored.Failure != tt.wantFailure || stored.ChargeID != "" {
				t.Errorf("stored order: status %q failure %q charge %q; want failed, %q, no charge",
					stored.Status, stored.Failure, stored.ChargeID, tt.wantFailure)
			}
			if o.Status != orders.StatusFailed {
				t.Errorf("returned order status = %q, want failed", o.Status)
			}
		})
	}
}

// A charge whose outcome is unknown — it timed out, payments could not be
// reached, the caller gave up, or the provider has not answered yet — may
// have taken the money. The order is stored payment_pending, which is an
// answer and not an error: the key keeps it, stock stays reserved, nothing
// is shipped yet, and the reconciler settles it under the same payment key.
func TestPlaceOrderUnknownPaymentOutcome(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status orders.ChargeStatus
	}{
		{"deadline exceeded", status.Error(codes.DeadlineExceeded, "payment provider did not answer in time; the charge is pending"), ""},
		{"unavailable", status.Error(codes.Unavailable, "connection refused"), ""},
		{"canceled", status.Error(codes.Canceled, "context canceled"), ""},
		{"budget ran out in orders", context.DeadlineExceeded, ""},
		{"charge pending at the provider", nil, "pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newShop(t)
			s.payments.err, s.payments.chargeStatus = tt.err, tt.status
			o, err := s.svc.PlaceOrder(context.Background(), request())
			if err != nil {
				t.Fatalf("PlaceOrder = %v, want an order payment_pending and no error", err)
			}
			want := []string{"keys.Claim", "store.Create", "catalog.Reserve", "payments.Charge", "store.Update:payment_pending", "keys.Complete"}
			if got := s.log.get(); !slices.Equal(got, want) {
				t.Errorf("calls = %q, want %q", got, want)
			}
			if o.Status != orders.StatusPaymentPending || o.PaymentKey != "pay_"+o.ID || o.ReservationID != "res-1" || o.ChargeID != "" || o.Failure != "" {
				t.Errorf("order = %+v, want payment_pending with its payment key and reservation", o)
			}
			if stored := s.store.orders[o.ID]; stored.Status != orders.StatusPaymentPending {
				t.Errorf("stored status = %q, want payment_pending", stored.Status)
			}
			if len(s.catalog.released) != 0 {
				t.Errorf("released %v: the money may be taken, the stock must stay reserved", s.catalog.released)
			}
		})
	}
}

// Once the money is taken, shipping is off the critical path (the outbox
// mechanism, on in budgeted mode): a failed shipment confirms the order
// with its shipment pending, for the outbox to book later. Without the
// outbox (naive), every step is called in line and the checkout fails at
// shipping, with the money already taken.
func TestPlaceOrderShippingFails(t *testing.T) {
	shippingErr := serviceStatus(codes.DeadlineExceeded, "carrier did not answer in time")
	t.Run("outbox", func(t *testing.T) {
		s := newShop(t)
		s.shipping.err = shippingErr
		o, err := s.svc.PlaceOrder(context.Background(), request())
		if err != nil {
			t.Fatalf("PlaceOrder = %v, want a confirmed order", err)
		}
		want := []string{"keys.Claim", "store.Create", "catalog.Reserve", "payments.Charge", "shipping.Ship", "store.Update:confirmed", "keys.Complete"}
		if got := s.log.get(); !slices.Equal(got, want) {
			t.Errorf("calls = %q, want %q", got, want)
		}
		if o.Status != orders.StatusConfirmed || o.ShipmentStatus != orders.ShipmentPending || o.ChargeID != "ch-1" || o.ShipmentID != "" {
			t.Errorf("order = %+v, want confirmed, charged, shipment pending", o)
		}
		if len(s.catalog.released) != 0 {
			t.Errorf("a charged order released its stock: %v", s.catalog.released)
		}
	})
	t.Run("no outbox", func(t *testing.T) {
		s := newShop(t)
		s.settings.Store(settingsOf(mode.Naive))
		s.shipping.err = shippingErr
		o, err := s.svc.PlaceOrder(context.Background(), request())
		if apperr.GRPCCode(err) != codes.DeadlineExceeded || !errors.Is(err, shippingErr) {
			t.Errorf("PlaceOrder error = %v, want shipping's DeadlineExceeded", err)
		}
		want := []string{"store.Create", "catalog.Reserve", "payments.Charge", "shipping.Ship", "catalog.Release", "store.Update:failed"}
		if got := s.log.get(); !slices.Equal(got, want) {
			t.Errorf("calls = %q, want %q", got, want)
		}
		stored := s.store.orders[o.ID]
		if stored.Status != orders.StatusFailed || stored.ChargeID != "ch-1" || stored.Failure != "booking the shipment: carrier did not answer in time" {
			t.Errorf("stored order = status %q charge %q failure %q; want failed, the charge kept on it, shipping's failure",
				stored.Status, stored.ChargeID, stored.Failure)
		}
	})
}

// The request's context may end while a step runs (the caller's budget ran
// out, the client left). Recording the order, releasing its stock and
// storing or releasing its key must still happen: they run on a context
// without the request's cancellation, bounded by a timeout of their own,
// and keep its values.
func TestPlaceOrderBookkeepingOutlivesRequest(t *testing.T) {
	tests := []struct {
		name       string
		endRequest func(cancel context.CancelFunc) func(*shop)
		wantStatus orders.Status
		wantCalls  []string
	}{
		{
			name: "payments times out as the caller leaves",
			endRequest: func(cancel context.CancelFunc) func(*shop) {
				return func(s *shop) {
					s.payments.during = cancel
					s.payments.err = status.Error(codes.Canceled, "context canceled")
				}
			},
			wantStatus: orders.StatusPaymentPending,
			wantCalls:  []string{"keys.Claim", "store.Create", "catalog.Reserve", "payments.Charge", "store.Update:payment_pending", "keys.Complete"},
		},
		{
			name: "payments declines after the caller left",
			endRequest: func(cancel context.CancelFunc) func(*shop) {
				return func(s *shop) {
					s.payments.during = cancel
					s.payments.chargeStatus = "failed"
				}
			},
			wantStatus: orders.StatusFailed,
			wantCalls:  []string{"keys.Claim", "store.Create", "catalog.Reserve", "payments.Charge", "catalog.Release", "store.Update:failed", "keys.Release"},
		},
		{
			name: "shipping fails after the caller left",
			endRequest: func(cancel context.CancelFunc) func(*shop) {
				return func(s *shop) {
					s.shipping.during = cancel
					s.shipping.err = status.Error(codes.DeadlineExceeded, "budget exhausted")
				}
			},
			wantStatus: orders.StatusConfirmed,
			wantCalls:  []string{"keys.Claim", "store.Create", "catalog.Reserve", "payments.Charge", "shipping.Ship", "store.Update:confirmed", "keys.Complete"},
		},
		{
			name: "shipping fails after the caller left, no outbox",
			endRequest: func(cancel context.CancelFunc) func(*shop) {
				return func(s *shop) {
					s.settings.Store(settingsOf(mode.Naive))
					s.shipping.during = cancel
					s.shipping.err = status.Error(codes.DeadlineExceeded, "budget exhausted")
				}
			},
			wantStatus: orders.StatusFailed,
			wantCalls:  []string{"store.Create", "catalog.Reserve", "payments.Charge", "shipping.Ship", "catalog.Release", "store.Update:failed"},
		},
		{
			name: "shipping succeeds just as the caller leaves",
			endRequest: func(cancel context.CancelFunc) func(*shop) {
				return func(s *shop) { s.shipping.during = cancel }
			},
			wantStatus: orders.StatusConfirmed,
			wantCalls:  []string{"keys.Claim", "store.Create", "catalog.Reserve", "payments.Charge", "shipping.Ship", "store.Update:confirmed", "keys.Complete"},
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
			if got := s.log.get(); !slices.Equal(got, tt.wantCalls) {
				t.Errorf("calls = %q, want %q", got, tt.wantCalls)
			}
			seen := slices.Concat(s.catalog.releaseCtx, s.store.updateCtx, s.keys.ctx)
			if len(seen) < 2 {
				t.Fatalf("%d bookkeeping calls were made, want at least 2", len(seen))
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
	s.payments.chargeStatus = "failed"
	s.catalog.releaseErr = status.Error(codes.Unavailable, "catalog down too")
	o, err := s.svc.PlaceOrder(context.Background(), request())
	if apperr.GRPCCode(err) != codes.FailedPrecondition {
		t.Errorf("error = %v, want the declined payment (FailedPrecondition)", err)
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
	// Nothing runs for an order that was not stored, and the key is given
	// back for the client's retry: the claim is undone with the order's
	// create, so the retry proceeds rather than waiting on the key.
	if want, got := []string{"keys.Claim", "store.Create"}, s.log.get(); !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
	s.store.createErr = nil
	if o, err := s.svc.PlaceOrder(context.Background(), request()); err != nil || o.Status != orders.StatusConfirmed {
		t.Errorf("the client's retry = %+v, %v; want the key given back and the order confirmed", o, err)
	}
}

// A key store that cannot be reached fails the checkout before anything is
// done: without the claim, nothing guards against a second charge.
func TestPlaceOrderKeyStoreFails(t *testing.T) {
	s := newShop(t)
	s.keys.claimErr = apperr.New(apperr.Unavailable, "database down")
	_, err := s.svc.PlaceOrder(context.Background(), request())
	if codeOf(err) != apperr.Unavailable {
		t.Errorf("error = %v, want the key store's Unavailable", err)
	}
	if want, got := []string{"keys.Claim"}, s.log.get(); !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
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
			// Not even the key is claimed for a request that is wrong.
			if got := s.log.get(); len(got) != 0 {
				t.Errorf("an invalid request reached %q", got)
			}
		})
	}
}

func TestGetOrder(t *testing.T) {
	log := &callLog{}
	store := orders.NewMemStore()
	svc, err := orders.NewService(orders.Deps{
		Store: store, Keys: orders.NewMemKeys(store), Catalog: &fakeCatalog{log: log},
		Payments: &fakePayments{log: log}, Fraud: &fakeFraud{}, Shipping: &fakeShipping{log: log}, Audit: &fakeAudit{},
		Settings: mode.NewLive(settingsOf(mode.Budgeted)), Log: slog.New(slog.DiscardHandler),
	})
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
	listed, err := s.List(ctx, orders.Filter{Status: orders.StatusPending})
	if err != nil || len(listed) != 1 {
		t.Fatalf("List = %v, %v; want ord_1", listed, err)
	}
	listed[0].Items[0].Qty = 7
	if again, _ := s.Get(ctx, "ord_1"); again.Items[0].Qty != 1 {
		t.Errorf("stored qty = %d after changing a listed copy, want 1", again.Items[0].Qty)
	}
	if err := s.Create(ctx, o); codeOf(err) != apperr.Conflict {
		t.Errorf("second Create of ord_1 = %v, want Conflict", err)
	}
	if err := s.Update(ctx, orders.Order{ID: "ord_2"}); codeOf(err) != apperr.NotFound {
		t.Errorf("Update of an unknown order = %v, want NotFound", err)
	}
}

// List selects by status, shipment status and age, least recently updated
// first, up to the limit: what the reconciler and the outbox ask for.
func TestMemStoreList(t *testing.T) {
	ctx := context.Background()
	s := orders.NewMemStore()
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, o := range []orders.Order{
		{ID: "p3", Status: orders.StatusPaymentPending, UpdatedAt: t0.Add(3 * time.Second)},
		{ID: "p1", Status: orders.StatusPaymentPending, UpdatedAt: t0.Add(1 * time.Second)},
		{ID: "p2", Status: orders.StatusPaymentPending, UpdatedAt: t0.Add(2 * time.Second)},
		{ID: "p9", Status: orders.StatusPaymentPending, UpdatedAt: t0.Add(9 * time.Second)},
		{ID: "c1", Status: orders.StatusConfirmed, ShipmentStatus: orders.ShipmentPending, UpdatedAt: t0},
		{ID: "c2", Status: orders.StatusConfirmed, ShipmentStatus: orders.ShipmentBooked, UpdatedAt: t0},
		{ID: "f1", Status: orders.StatusFailed, UpdatedAt: t0},
	} {
		if err := s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		f    orders.Filter
		want []string
	}{
		{"by status, oldest first", orders.Filter{Status: orders.StatusPaymentPending}, []string{"p1", "p2", "p3", "p9"}},
		{"updated before", orders.Filter{Status: orders.StatusPaymentPending, UpdatedBefore: t0.Add(3 * time.Second)}, []string{"p1", "p2"}},
		{"limit", orders.Filter{Status: orders.StatusPaymentPending, Limit: 3}, []string{"p1", "p2", "p3"}},
		{"shipment status", orders.Filter{Status: orders.StatusConfirmed, ShipmentStatus: orders.ShipmentPending}, []string{"c1"}},
		{"any shipment status", orders.Filter{Status: orders.StatusConfirmed}, []string{"c1", "c2"}},
		{"none", orders.Filter{Status: orders.StatusPending}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.List(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, o := range got {
				ids = append(ids, o.ID)
			}
			if tt.name == "any shipment status" {
				slices.Sort(ids) // equal UpdatedAt: either order
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("List(%+v) = %v, want %v", tt.f, ids, tt.want)
			}
		})
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
