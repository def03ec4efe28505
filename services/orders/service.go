package orders

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/internal/telemetry"
)

// Service is the orders use cases.
type Service struct {
	store    Store
	keys     Keys
	catalog  Catalog
	payments Payments
	fraud    Fraud
	shipping Shipping
	audit    Audit
	auditQ   *auditQueue
	settings *mode.Live
	work     sim.Simulator
	metrics  *telemetry.Metrics
	log      *slog.Logger
	now      func() time.Time
}

// Deps are what the Service needs.
type Deps struct {
	Store Store
	// Keys records keyed checkouts' orders with their keys, so it must
	// write to Store's orders: PGKeys on Store's database, or NewMemKeys
	// given Store.
	Keys     Keys
	Catalog  Catalog
	Payments Payments
	// Fraud is payments' fraud screen, asked before the charge.
	Fraud    Fraud
	Shipping Shipping
	// Audit is payments' audit trail, the destination of the fire-forward
	// audit queue (audit.go).
	Audit Audit
	// AuditQueue shapes the queue; zero fields take DefaultAuditSettings.
	AuditQueue AuditSettings
	// Metrics, when set, count degraded answers and audit events.
	Metrics *telemetry.Metrics
	// Settings are the mode's settings. A request reads the snapshot its
	// server took (mode.Live.For); a background worker takes one per unit
	// of work (see unitOfWork).
	Settings *mode.Live
	Log      *slog.Logger
	// Work, when set, simulates orders' own work; its "Finish" method is
	// the final write of a checkout (storing the order and the answer),
	// which the 800 ms waterfall keeps 80 ms of the budget for.
	Work sim.Simulator
}

// NewService returns a Service; every dependency is required.
func NewService(d Deps) (*Service, error) {
	if d.Store == nil || d.Keys == nil || d.Catalog == nil || d.Payments == nil || d.Fraud == nil || d.Shipping == nil || d.Audit == nil || d.Settings == nil || d.Log == nil {
		return nil, errors.New("orders: store, keys, catalog, payments, fraud, shipping, audit, settings and log are required")
	}
	s := &Service{store: d.Store, keys: d.Keys, catalog: d.Catalog, payments: d.Payments, fraud: d.Fraud,
		shipping: d.Shipping, audit: d.Audit, settings: d.Settings, work: d.Work, metrics: d.Metrics, log: d.Log, now: time.Now}
	s.auditQ = newAuditQueue(d.Audit, d.AuditQueue, d.Settings, d.Metrics, d.Log, func() time.Time { return s.now() })
	d.Metrics.DegradedDependency(estimateDep)
	return s, nil
}

// StartAudit runs the audit queue's workers, and returns what stops them:
// the queue takes no more events, and what it holds is written within
// timeout (see audit.go). Call stop after the requests in flight have
// drained and before the connection to payments closes.
func (s *Service) StartAudit() (stop func(timeout time.Duration)) {
	s.auditQ.start()
	return s.auditQ.stop
}

// unitOfWork bounds one piece of a background worker's work (settling
// one order, booking one shipment) and takes its mode snapshot: a worker
// belongs to no request, so each unit reads the mode once for itself and
// every call it makes runs in that one mode.
func (s *Service) unitOfWork(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, _ = s.settings.Snapshot(ctx)
	return context.WithTimeout(ctx, workerTimeout)
}

// bookkeepingTimeout bounds writes that must outlive the request (marking
// an order failed, releasing its stock) once the request's own budget is
// gone.
const bookkeepingTimeout = 2 * time.Second

// bookkeeping returns a context for writes that must land even when the
// request's budget is gone: the request's values without its deadline or
// cancellation, bounded by a timeout of its own.
func bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
}

// PlaceOrder runs a checkout. With idempotency on and a key given, the key
// is claimed first: a retry of a completed checkout gets the stored answer
// back, and nothing is done twice (see idempotency.go).
func (s *Service) PlaceOrder(ctx context.Context, req PlaceRequest) (Order, error) {
	if err := req.Validate(); err != nil {
		return Order{}, err
	}
	if req.IdempotencyKey == "" || !s.settings.For(ctx).Mechanisms.Idempotency {
		req.IdempotencyKey = "" // not kept: the order is not placed under it
		return s.place(ctx, req)
	}
	return s.placeOnce(ctx, req)
}

// place runs the chain: reserve stock ∥ screen, then charge, then ship;
// beside it, the optional delivery estimate, and after it, the
// fire-forward audit event (graph.go says what each dependency's failure
// does).
//
//   - Reserving the stock and screening the order do not depend on each
//     other, so they are one step of two branches (prepare); the charge
//     needs both.
//   - A failure before the charge fails the order and releases its stock.
//   - A charge whose outcome is unknown — it timed out, or payments could
//     not be reached — leaves the order payment_pending; the reconciler
//     settles it by asking payments under the same key. Nothing mints a
//     second key for the order.
//   - A shipping failure after the charge confirms the order with its
//     shipment pending, and the outbox books it later: shipping is off the
//     critical path once the money is taken (the Outbox mechanism; off,
//     the checkout fails).
func (s *Service) place(ctx context.Context, req PlaceRequest) (Order, error) {
	o := s.newOrder(req)
	if err := s.store.Create(ctx, o); err != nil {
		return Order{}, err
	}
	return s.run(ctx, o)
}

// newOrder is the pending order of a checkout, not stored yet.
func (s *Service) newOrder(req PlaceRequest) Order {
	now := s.now()
	o := Order{
		ID: newID("ord"), Status: StatusPending, Customer: req.Customer,
		Items: req.Items, Address: req.Address, RequestID: req.RequestID, IdempotencyKey: req.IdempotencyKey,
		CreatedAt: now, UpdatedAt: now,
	}
	o.PaymentKey = "pay_" + o.ID
	return o
}

// run takes a stored pending order through the chain (see place).
func (s *Service) run(ctx context.Context, o Order) (Order, error) {
	est := s.askEstimate(ctx, o)

	o, err := s.prepare(ctx, o)
	if err != nil {
		return s.fail(ctx, o, err)
	}

	ch, err := s.payments.Charge(ctx, o)
	switch {
	case unknownOutcome(err) || (err == nil && ch.Status == ChargePending):
		o.Status = StatusPaymentPending
		return s.save(ctx, o)
	case err != nil:
		return s.fail(ctx, o, apperr.FromGRPC(err, "charging"))
	case ch.Status != ChargeSucceeded:
		return s.fail(ctx, o, apperr.New(apperr.Conflict, "charging: the payment was declined"))
	}
	o.ChargeID = ch.ID
	return s.ship(ctx, o, est)
}

// ship books the shipment of a charged order and confirms it. When
// shipping fails, the outbox confirms the order with its shipment pending
// and books it later; without the outbox the checkout fails, as a chain
// that calls every step in line does — with the money already taken.
//
// The confirmed order then takes its delivery estimate (est; nil when the
// reconciler confirms an order whose checkout has already answered) and
// hands its audit event on (fireForward). With criticality off both are
// in line, and the failure of either fails the checkout, the money taken.
func (s *Service) ship(ctx context.Context, o Order, est *quote) (Order, error) {
	// The outbox books the shipment of an order confirmed long ago: its
	// audit event went when it was confirmed.
	completes := o.Status != StatusConfirmed
	id, err := s.shipping.Ship(ctx, o)
	switch {
	case err == nil:
		o.ShipmentID, o.ShipmentStatus = id, ShipmentBooked
	case treats(s.settings.For(ctx).Mechanisms, "shipping") == Deferred:
		o.ShipmentStatus = ShipmentPending
	default:
		return s.fail(ctx, o, apperr.FromGRPC(err, "booking the shipment"))
	}
	o.Status = StatusConfirmed
	if est != nil {
		if o, err = est.apply(ctx, s, o); err != nil {
			return s.fail(ctx, o, err)
		}
	}
	if completes {
		if err := s.fireForward(ctx, o); err != nil {
			return s.fail(ctx, o, err)
		}
	}
	return s.save(ctx, o)
}

// save records o, whatever is left of the request's budget, with the
// answer to its idempotency key when the checkout answers one (record).
// When the store fails, the order stays pending in the store with its
// stock held and perhaps its money taken: the error wraps errUnrecorded, and the
// sweeper settles the order later (reconcile.go).
func (s *Service) save(ctx context.Context, o Order) (Order, error) {
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	s.finish(bctx)
	o.UpdatedAt = s.now()
	if err := s.record(bctx, o); err != nil {
		return Order{}, fmt.Errorf("%w: %w", errUnrecorded, err)
	}
	return o, nil
}

// errUnrecorded marks a checkout whose outcome could not be recorded.
var errUnrecorded = errors.New("the order's outcome could not be recorded")

// finish does the simulated work of a checkout's final write, recorded as
// the "finish" hop.
func (s *Service) finish(ctx context.Context) {
	if s.work != nil {
		_ = s.work.Work(ctx, sim.OrdersFinish)
	}
}

// unknownOutcome reports whether a charge attempt may or may not have
// taken the money: it timed out, or never got an answer — unless no
// attempt reached payments but to be refused (notcharged.go).
func unknownOutcome(err error) bool {
	if nothingCharged(err) {
		return false
	}
	switch apperr.GRPCCode(err) {
	case codes.DeadlineExceeded, codes.Unavailable, codes.Canceled:
		return true
	}
	return false
}

// fail records o as failed because of cause and gives its stock back.
func (s *Service) fail(ctx context.Context, o Order, cause error) (Order, error) {
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	s.finish(bctx)
	o.Status, o.Failure, o.UpdatedAt = StatusFailed, apperr.Public(cause), s.now()
	if o.ReservationID != "" {
		if err := s.catalog.Release(bctx, o.ReservationID); err != nil {
			// Recorded, the order keeps its reservation until the
			// worker gives the stock back (ReleaseHeldStock).
			o.StockHeld = true
			s.log.Error("releasing stock of a failed order", "order_id", o.ID, "reservation_id", o.ReservationID, "err", err)
		}
	}
	if err := s.store.Update(bctx, o); err != nil {
		s.log.Error("recording a failed order", "order_id", o.ID, "err", err)
	}
	return o, &orderError{id: o.ID, err: cause}
}

// orderError is a failed checkout: which order, and why.
type orderError struct {
	id  string
	err error
}

var _ apperr.PublicMessager = (*orderError)(nil)

func (e *orderError) Error() string { return "order " + e.id + ": " + e.err.Error() }

// PublicMessage names the order and what of the failure a client may read.
func (e *orderError) PublicMessage() string { return "order " + e.id + ": " + apperr.Public(e.err) }

func (e *orderError) Unwrap() error { return e.err }
