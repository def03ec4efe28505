package orders

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// The Idempotency-Key contract (IETF httpapi draft), kept by orders:
//
//   - the first request with a key claims it, atomically, with a hash of
//     the request and a lease;
//   - a request with the same key while the first is in flight is told
//     so (409 at the edge);
//   - a request with the same key and a different body is refused (422);
//   - once the first request has an answer, every later one with the same
//     key and body gets that answer back, and nothing is done again;
//   - a claim whose holder failed before doing anything is released, so a
//     retry may try afresh; one whose holder vanished expires with its
//     lease, and the next request takes it over.

// Keys keeps idempotency keys, and writes each keyed checkout's order
// with its key: the order with the key's claim, and the order's outcome
// with the key's answer, each pair in one transaction on PostgreSQL, so
// that a keyed checkout commits twice in orders, not four times
// (docs/performance.md). The orders it writes are the Service's Store's:
// PGKeys shares its database, NewMemKeys is given it.
type Keys interface {
	// ClaimWithOrder takes key for a request whose hash is hash, until
	// leaseUntil. When the key is unknown, or its holder's lease ran out
	// before now without an answer, the key is taken and claimed is true.
	// Otherwise the stored record is returned. When the key was unknown,
	// o is stored as Store.Create would, with the claim: when o cannot be
	// stored, the key is not claimed either. A takeover stores no order:
	// the caller first looks for what the vanished holder left (resume).
	ClaimWithOrder(ctx context.Context, key, hash string, now, leaseUntil time.Time, o Order) (rec KeyRecord, claimed bool, err error)
	// CompleteWithOrder replaces the stored order with o, as Store.Update
	// does, and stores response as key's answer, together. answered is
	// false when key is unknown (the order is updated all the same); an
	// unknown order is an error with code NotFound, and then nothing
	// changes.
	CompleteWithOrder(ctx context.Context, o Order, key string, response []byte) (answered bool, err error)
	// Complete stores the answer to the request holding key, for an
	// answer that records no order: a checkout's failure, or a swept
	// order's outcome.
	Complete(ctx context.Context, key string, response []byte) error
	// Release gives up a claim, so that the next request may take it.
	Release(ctx context.Context, key string) error
	// Reap deletes up to limit keys created before cutoff, and says how
	// many it deleted.
	Reap(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// KeyRecord is a stored idempotency key.
type KeyRecord struct {
	Key         string
	RequestHash string
	// Completed reports that Response holds the answer.
	Completed  bool
	Response   []byte
	LeaseUntil time.Time
	CreatedAt  time.Time
	// TakenOver reports a claim that took the key from a holder whose
	// lease ran out with no answer: that holder may have left an order
	// behind (see resume in reconcile.go).
	TakenOver bool
}

// Idempotency timings: a lease longer than any budget the edge allows, so
// a live request never loses its key; keys kept a day, as the draft asks.
const (
	KeyLease     = 30 * time.Second
	KeyRetention = 24 * time.Hour
)

// ReasonKeyReused is the ErrorInfo reason of a key reused with another
// request.
const ReasonKeyReused = "IDEMPOTENCY_KEY_REUSED"

var (
	errKeyInFlight = &apperr.Error{Code: apperr.Conflict, Message: "a request with this Idempotency-Key is still in flight; retry later"}
	errKeyReused   = &apperr.Error{Code: apperr.Invalid, Message: "this Idempotency-Key was used with a different request"}
)

// keyStatus is the gRPC status of an idempotency refusal, if err is one.
func keyStatus(err error) (*status.Status, bool) {
	switch {
	case errors.Is(err, errKeyInFlight):
		return apperr.PublicStatus(codes.Aborted, errKeyInFlight.Message, errKeyInFlight.Message), true
	case errors.Is(err, errKeyReused):
		return apperr.PublicStatus(codes.FailedPrecondition, errKeyReused.Message, errKeyReused.Message,
			&errdetails.ErrorInfo{Reason: ReasonKeyReused, Domain: "mercado"}), true
	}
	return nil, false
}

// Hash is a digest of what the request asks for, to tell a retry from a
// different request reusing its key.
func (r PlaceRequest) Hash() string {
	b, _ := json.Marshal(struct {
		Customer string
		Items    []Item
		Address  string
	}{r.Customer, r.Items, r.Address})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// placeOnce runs a checkout under its idempotency key. The key is
// claimed and the order recorded in one write (Keys.ClaimWithOrder), and
// the order's outcome is recorded with the key's answer in one (save,
// through answering), so a checkout that succeeds writes twice in orders.
func (s *Service) placeOnce(ctx context.Context, req PlaceRequest) (Order, error) {
	hash, o, now := req.Hash(), s.newOrder(req), s.now()
	rec, claimed, err := s.keys.ClaimWithOrder(ctx, req.IdempotencyKey, hash, now, now.Add(KeyLease), o)
	if err != nil {
		return Order{}, err
	}
	if !claimed {
		switch {
		case rec.RequestHash != hash:
			return Order{}, errKeyReused
		case !rec.Completed:
			return Order{}, errKeyInFlight
		}
		var a storedAnswer
		if err := json.Unmarshal(rec.Response, &a); err != nil {
			return Order{}, fmt.Errorf("replaying key %q: %w", req.IdempotencyKey, err)
		}
		if a.Code != codes.OK {
			return Order{}, apperr.PublicStatus(a.Code, a.Message, a.Public).Err()
		}
		return a.Order, nil
	}

	if rec.TakenOver {
		// The key's last holder vanished without an answer — its process
		// died, or lost its database — and may have left an order behind.
		if o, done, err := s.resume(ctx, req.IdempotencyKey); done || err != nil {
			return o, err
		}
		if err := s.store.Create(ctx, o); err != nil {
			s.releaseKey(ctx, req.IdempotencyKey)
			return Order{}, err
		}
	}

	o, err = s.run(answering(ctx, req.IdempotencyKey), o)
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	switch {
	case err == nil:
		// save stored the answer with the order.
		return o, nil
	case errors.Is(err, errUnrecorded):
		// The order is in the store, pending, perhaps charged: keep the
		// key held, so a retry waits (409) rather than charging again,
		// until the sweeper settles the order and answers the key.
		return Order{}, err
	case o.ChargeID == "":
		// Nothing was charged: the order failed and its stock is back.
		// Let the client's retry try again.
		s.releaseKey(bctx, req.IdempotencyKey)
		return o, err
	}
	// A failure after the money was taken is final too (a retry must not
	// charge again): store it for replay.
	b, _ := json.Marshal(storedAnswer{Code: apperr.GRPCCode(err), Message: err.Error(), Public: apperr.Public(err)})
	if cerr := s.keys.Complete(bctx, req.IdempotencyKey, b); cerr != nil {
		s.log.Error("storing the answer of an idempotency key", "key", req.IdempotencyKey, "err", cerr)
	}
	return o, err
}

// releaseKey gives up a claim, logging a failure: the key then expires
// with its lease.
func (s *Service) releaseKey(ctx context.Context, key string) {
	if err := s.keys.Release(ctx, key); err != nil {
		s.log.Error("releasing an idempotency key", "key", key, "err", err)
	}
}

// answeringKey marks a request's context with the idempotency key its
// checkout's outcome answers: save stores the answer with the order.
type answeringKey struct{}

// answering returns ctx marked to answer key when the order is saved.
func answering(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, answeringKey{}, key)
}

// record writes o at the end of a checkout: with its stored answer, in
// one write, when ctx answers o's idempotency key (answering).
func (s *Service) record(ctx context.Context, o Order) error {
	key, _ := ctx.Value(answeringKey{}).(string)
	if key == "" || key != o.IdempotencyKey {
		return s.store.Update(ctx, o)
	}
	b, _ := json.Marshal(storedAnswer{Order: o})
	answered, err := s.keys.CompleteWithOrder(ctx, o, key, b)
	if err == nil && !answered {
		s.log.Error("storing the answer of an idempotency key: the key is gone", "key", key, "order_id", o.ID)
	}
	return err
}

// storedAnswer is what a completed key replays: the order, or the error
// (its code, its whole message for the log, and what of it a client may
// read).
type storedAnswer struct {
	Order   Order      `json:"order"`
	Code    codes.Code `json:"code,omitempty"`
	Message string     `json:"message,omitempty"`
	Public  string     `json:"public,omitempty"`
}

// ReapKeys deletes keys older than the retention, in batches.
func (s *Service) ReapKeys(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := s.keys.Reap(ctx, s.now().Add(-KeyRetention), 500)
		total += n
		if err != nil || n < 500 {
			return total, err
		}
	}
}
