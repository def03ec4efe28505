package orders_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/mode"
	ordersv1 "github.com/mercado-lab/mercado/proto/orders/v1"
	"github.com/mercado-lab/mercado/services/orders"
)

// protoRequest is r as the gateway sends it.
func protoRequest(r orders.PlaceRequest) *ordersv1.PlaceOrderRequest {
	pr := &ordersv1.PlaceOrderRequest{Customer: r.Customer, Address: r.Address, IdempotencyKey: r.IdempotencyKey, RequestId: r.RequestID}
	for _, it := range r.Items {
		pr.Items = append(pr.Items, &ordersv1.Item{Sku: it.SKU, Qty: it.Qty})
	}
	return pr
}

// sameOrder compares two orders, times by the instant they name: a
// replayed answer has been through JSON, which keeps the instant but not
// the monotonic reading or the location.
func sameOrder(a, b orders.Order) bool {
	norm := func(o orders.Order) orders.Order {
		o.CreatedAt, o.UpdatedAt = o.CreatedAt.UTC().Round(0), o.UpdatedAt.UTC().Round(0)
		return o
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// A retry of a completed checkout (same key, same body) gets the first
// answer back and nothing is done again, whatever that answer was.
func TestPlaceOrderReplay(t *testing.T) {
	tests := []struct {
		name  string
		setup func(*shop)
		want  orders.Status
	}{
		{"confirmed", func(*shop) {}, orders.StatusConfirmed},
		{"payment pending", func(s *shop) { s.payments.err = status.Error(codes.DeadlineExceeded, "too slow") }, orders.StatusPaymentPending},
		{"shipment pending", func(s *shop) { s.shipping.err = status.Error(codes.Unavailable, "carrier down") }, orders.StatusConfirmed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newShop(t)
			tt.setup(s)
			ctx := context.Background()
			first, err := s.svc.PlaceOrder(ctx, request())
			if err != nil {
				t.Fatal(err)
			}
			if first.Status != tt.want {
				t.Fatalf("first status = %q, want %q", first.Status, tt.want)
			}
			s.log.reset()

			// The dependencies would now answer differently: a replay must
			// not ask them.
			s.payments.err, s.shipping.err = nil, nil
			retry := request()
			retry.RequestID = "req-retry" // not part of what the request asks for
			second, err := s.svc.PlaceOrder(ctx, retry)
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			if !sameOrder(first, second) {
				t.Errorf("replay = %+v\nwant the first answer %+v", second, first)
			}
			if got, want := s.log.get(), []string{"keys.Claim"}; !slices.Equal(got, want) {
				t.Errorf("replay calls = %q, want %q: nothing done twice", got, want)
			}
			if n := len(s.store.all()); n != 1 {
				t.Errorf("%d orders stored, want 1", n)
			}
			if n := len(s.payments.charges()); n > 1 {
				t.Errorf("payments asked %d times, want at most 1", n)
			}

			// Through the gRPC adapter, as the gateway sees it: the same
			// message each time.
			g := orders.GRPCServer(s.svc)
			a, err := g.PlaceOrder(ctx, protoRequest(request()))
			if err != nil {
				t.Fatal(err)
			}
			b, err := g.PlaceOrder(ctx, protoRequest(retry))
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(a, b) || a.GetOrderId() != first.ID || a.GetStatus() != orders.StatusToProto(tt.want) {
				t.Errorf("gRPC replays differ or are not the first order:\n%v\n%v", a, b)
			}
		})
	}
}

// startBlocked starts a checkout that stops inside payments.Charge, and
// returns a function that lets it finish and waits for its answer.
func startBlocked(t *testing.T, s *shop, req orders.PlaceRequest) func() (orders.Order, error) {
	t.Helper()
	entered, release := make(chan struct{}), make(chan struct{})
	s.payments.set(func(p *fakePayments) { p.entered, p.release = entered, release })
	type answer struct {
		o   orders.Order
		err error
	}
	done := make(chan answer, 1)
	go func() {
		o, err := s.svc.PlaceOrder(context.Background(), req)
		done <- answer{o, err}
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first checkout never reached payments")
	}
	s.payments.set(func(p *fakePayments) { p.entered, p.release = nil, nil })
	return func() (orders.Order, error) {
		close(release)
		a := <-done
		return a.o, a.err
	}
}

// A second request with the key while the first is still running is told
// so: Aborted over gRPC (409 at the edge), and nothing is done for it.
func TestPlaceOrderKeyInFlight(t *testing.T) {
	s := newShop(t)
	finish := startBlocked(t, s, request())

	s.log.reset()
	_, err := orders.GRPCServer(s.svc).PlaceOrder(context.Background(), protoRequest(request()))
	if st := status.Convert(err); st.Code() != codes.Aborted {
		t.Errorf("in flight: status %v (%v), want Aborted", st.Code(), err)
	}
	if got, want := s.log.get(), []string{"keys.Claim"}; !slices.Equal(got, want) {
		t.Errorf("calls for the second request = %q, want %q", got, want)
	}

	first, err := finish()
	if err != nil || first.Status != orders.StatusConfirmed {
		t.Fatalf("first checkout = %+v, %v; want confirmed", first, err)
	}
	// Once it has an answer, the same request gets it.
	again, err := s.svc.PlaceOrder(context.Background(), request())
	if err != nil || !sameOrder(again, first) {
		t.Errorf("after completion: %+v, %v; want the first answer", again, err)
	}
	if n := len(s.payments.charges()); n != 1 {
		t.Errorf("payments asked %d times, want 1", n)
	}
}

// The key reused with a different request is refused with
// FailedPrecondition and the ErrorInfo reason the gateway turns into 422,
// both while the first request runs and after it completed.
func TestPlaceOrderKeyReused(t *testing.T) {
	other := request()
	other.Address = "2 Other St"
	otherItems := request()
	otherItems.Items = []orders.Item{{SKU: "tea-sencha", Qty: 3}}

	checkReused := func(t *testing.T, err error) {
		t.Helper()
		st := status.Convert(err)
		if st.Code() != codes.FailedPrecondition {
			t.Errorf("status %v (%v), want FailedPrecondition", st.Code(), err)
		}
		var reasons []string
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok {
				reasons = append(reasons, info.GetReason())
			}
		}
		if !slices.Equal(reasons, []string{orders.ReasonKeyReused}) {
			t.Errorf("ErrorInfo reasons = %q, want [%s]", reasons, orders.ReasonKeyReused)
		}
	}

	for _, diff := range []struct {
		name string
		req  orders.PlaceRequest
	}{{"address", other}, {"items", otherItems}} {
		t.Run("after completion/"+diff.name, func(t *testing.T) {
			s := newShop(t)
			if _, err := s.svc.PlaceOrder(context.Background(), request()); err != nil {
				t.Fatal(err)
			}
			s.log.reset()
			_, err := orders.GRPCServer(s.svc).PlaceOrder(context.Background(), protoRequest(diff.req))
			checkReused(t, err)
			if got, want := s.log.get(), []string{"keys.Claim"}; !slices.Equal(got, want) {
				t.Errorf("calls = %q, want %q", got, want)
			}
		})
	}
	t.Run("while in flight", func(t *testing.T) {
		s := newShop(t)
		finish := startBlocked(t, s, request())
		_, err := orders.GRPCServer(s.svc).PlaceOrder(context.Background(), protoRequest(other))
		checkReused(t, err)
		if _, err := finish(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("service error", func(t *testing.T) {
		s := newShop(t)
		if _, err := s.svc.PlaceOrder(context.Background(), request()); err != nil {
			t.Fatal(err)
		}
		_, err := s.svc.PlaceOrder(context.Background(), other)
		if codeOf(err) != apperr.Invalid {
			t.Errorf("error = %v, want code %q", err, apperr.Invalid)
		}
	})
}

// A checkout that failed took no money: its key is released, so the
// client's retry with the same key runs afresh, as a new order.
func TestPlaceOrderFailureReleasesKey(t *testing.T) {
	s := newShop(t)
	s.catalog.reserveErr = status.Error(codes.Unavailable, "catalog restarting")
	failed, err := s.svc.PlaceOrder(context.Background(), request())
	if err == nil {
		t.Fatal("first checkout succeeded, want the catalog's error")
	}
	s.catalog.reserveErr = nil
	retried, err := s.svc.PlaceOrder(context.Background(), request())
	if err != nil {
		t.Fatalf("retry with the same key: %v, want it to proceed", err)
	}
	if retried.Status != orders.StatusConfirmed || retried.ID == failed.ID || retried.PaymentKey == failed.PaymentKey {
		t.Errorf("retry = %+v, want a new confirmed order (first was %q)", retried, failed.ID)
	}
	// And the retry's answer is now the one kept.
	again, err := s.svc.PlaceOrder(context.Background(), request())
	if err != nil || !sameOrder(again, retried) {
		t.Errorf("third request = %+v, %v; want the retry's answer", again, err)
	}
}

// A holder that vanished (its process died between claiming the key and
// answering) holds the key until its lease ends; then the next request
// with the same body takes the key over.
func TestPlaceOrderLeaseTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newShop(t)
		ctx := context.Background()
		now := time.Now()
		if _, claimed, err := s.keys.keys.Claim(ctx, "key-1", request().Hash(), now, now.Add(orders.KeyLease)); err != nil || !claimed {
			t.Fatalf("claiming for the vanished holder: %v, %v", claimed, err)
		}

		time.Sleep(orders.KeyLease - time.Second)
		_, err := orders.GRPCServer(s.svc).PlaceOrder(ctx, protoRequest(request()))
		if st := status.Convert(err); st.Code() != codes.Aborted {
			t.Fatalf("a second before the lease ends: %v, want Aborted", err)
		}

		time.Sleep(time.Second)
		o, err := s.svc.PlaceOrder(ctx, request())
		if err != nil || o.Status != orders.StatusConfirmed {
			t.Fatalf("after the lease: %+v, %v; want the key taken over and the order confirmed", o, err)
		}
		again, err := s.svc.PlaceOrder(ctx, request())
		if err != nil || !sameOrder(again, o) {
			t.Errorf("replay after the takeover = %+v, %v; want %+v", again, err, o)
		}
		if n := len(s.payments.charges()); n != 1 {
			t.Errorf("payments asked %d times, want 1", n)
		}
	})
}

// With the mechanism off (naive mode), keys are ignored: a retried
// checkout is a new order and a new charge, under the same request ID.
// That is the duplicate the lab counts.
func TestPlaceOrderIdempotencyOff(t *testing.T) {
	tests := []struct {
		name     string
		settings mode.Settings
	}{
		{"naive mode", settingsOf(mode.Naive)},
		{"budgeted without idempotency", func() mode.Settings {
			st := settingsOf(mode.Budgeted)
			st.Mechanisms.Idempotency = false
			return st
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newShop(t)
			s.settings.Store(tt.settings)
			a, err := s.svc.PlaceOrder(context.Background(), request())
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.svc.PlaceOrder(context.Background(), request())
			if err != nil {
				t.Fatal(err)
			}
			if a.ID == b.ID || a.PaymentKey == b.PaymentKey {
				t.Errorf("same key twice gave order %q/%q and %q/%q, want two orders", a.ID, a.PaymentKey, b.ID, b.PaymentKey)
			}
			charged := s.payments.charges()
			if len(charged) != 2 || charged[0].RequestID != "req-1" || charged[1].RequestID != "req-1" {
				t.Errorf("charges = %+v, want two under request req-1", charged)
			}
			if slices.Contains(s.log.get(), "keys.Claim") {
				t.Errorf("calls = %q: the key store was used with idempotency off", s.log.get())
			}
		})
	}
}

// A checkout without a key (orders' own callers need not send one) is
// never deduplicated.
func TestPlaceOrderWithoutKey(t *testing.T) {
	s := newShop(t)
	req := request()
	req.IdempotencyKey = ""
	a, errA := s.svc.PlaceOrder(context.Background(), req)
	b, errB := s.svc.PlaceOrder(context.Background(), req)
	if errA != nil || errB != nil || a.ID == b.ID {
		t.Errorf("two checkouts without a key: %q (%v) and %q (%v), want two orders", a.ID, errA, b.ID, errB)
	}
	if slices.Contains(s.log.get(), "keys.Claim") {
		t.Errorf("calls = %q: a checkout without a key claimed one", s.log.get())
	}
}

func TestRequestHash(t *testing.T) {
	base := request()
	same := request()
	same.IdempotencyKey, same.RequestID = "another-key", "another-request"
	if base.Hash() != same.Hash() {
		t.Error("the key and request ID changed the hash: they are not what the request asks for")
	}
	for name, change := range map[string]func(*orders.PlaceRequest){
		"customer": func(r *orders.PlaceRequest) { r.Customer = "bob" },
		"address":  func(r *orders.PlaceRequest) { r.Address = "2 Loop Rd" },
		"qty":      func(r *orders.PlaceRequest) { r.Items[0].Qty++ },
		"sku":      func(r *orders.PlaceRequest) { r.Items[1].SKU = "mug-enamel" },
		"order":    func(r *orders.PlaceRequest) { r.Items[0], r.Items[1] = r.Items[1], r.Items[0] },
	} {
		r := request()
		change(&r)
		if r.Hash() == base.Hash() {
			t.Errorf("changing the %s kept the hash", name)
		}
	}
}

// countingKeys counts Reap calls and what each deleted, and can fail one.
type countingKeys struct {
	orders.Keys
	limits  []int
	deleted []int
	failOn  int // 1-based Reap call that fails; 0 never
}

func (k *countingKeys) Reap(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	k.limits = append(k.limits, limit)
	if len(k.limits) == k.failOn {
		return 0, errors.New("database down")
	}
	n, err := k.Keys.Reap(ctx, cutoff, limit)
	k.deleted = append(k.deleted, n)
	return n, err
}

// ReapKeys deletes the keys older than the retention, and only those, in
// batches, until a batch comes back short.
func TestReapKeys(t *testing.T) {
	tests := []struct {
		name        string
		old         int
		failOn      int
		wantDeleted int
		wantBatches []int
		wantErr     bool
	}{
		{"none old", 0, 0, 0, []int{0}, false},
		{"one short batch", 3, 0, 3, []int{3}, false},
		{"several batches", 1203, 0, 1203, []int{500, 500, 203}, false},
		{"a whole number of batches", 1000, 0, 1000, []int{500, 500, 0}, false},
		{"the store fails midway", 1203, 2, 500, []int{500}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store := orders.NewMemStore()
			mem := orders.NewMemKeys(store)
			keys := &countingKeys{Keys: mem, failOn: tt.failOn}
			log := &callLog{}
			svc, err := orders.NewService(orders.Deps{
				Store: store, Keys: keys, Catalog: &fakeCatalog{log: log},
				Payments: &fakePayments{log: log}, Fraud: &fakeFraud{}, Shipping: &fakeShipping{log: log}, Audit: &fakeAudit{},
				Settings: mode.NewLive(settingsOf(mode.Budgeted)), Log: discard(),
			})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			claim := func(key string, at time.Time) {
				if _, _, err := mem.Claim(ctx, key, "h", at, at.Add(orders.KeyLease)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range tt.old {
				claim(fmt.Sprintf("old-%d", i), now.Add(-orders.KeyRetention-time.Duration(i+1)*time.Second))
			}
			fresh := []string{"fresh-now", "fresh-hour", "fresh-almost-a-day"}
			claim(fresh[0], now)
			claim(fresh[1], now.Add(-time.Hour))
			claim(fresh[2], now.Add(-orders.KeyRetention+time.Minute))

			n, err := svc.ReapKeys(ctx)
			if (err != nil) != tt.wantErr {
				t.Errorf("ReapKeys error = %v, want error %v", err, tt.wantErr)
			}
			if n != tt.wantDeleted {
				t.Errorf("ReapKeys deleted %d, want %d", n, tt.wantDeleted)
			}
			if !slices.Equal(keys.deleted, tt.wantBatches) {
				t.Errorf("batches deleted %v, want %v", keys.deleted, tt.wantBatches)
			}
			for _, l := range keys.limits {
				if l != 500 {
					t.Errorf("batch limit %d, want 500", l)
				}
			}
			// A fresh key is still there: another request cannot claim it.
			for _, k := range fresh {
				if _, claimed, _ := mem.Claim(ctx, k, "other", now, now.Add(orders.KeyLease)); claimed {
					t.Errorf("fresh key %q was reaped", k)
				}
			}
			if !tt.wantErr && tt.old > 0 {
				if _, claimed, _ := mem.Claim(ctx, "old-0", "other", now, now.Add(orders.KeyLease)); !claimed {
					t.Error("an old key survived the reaping")
				}
			}
		})
	}
}

// The in-memory key store keeps the contract the service relies on.
func TestMemKeys(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := t0.Add(orders.KeyLease)
	type step struct {
		do          string // claim, complete, release
		key, hash   string
		at          time.Time
		wantClaimed bool
		wantDone    bool // the record returned is completed
		wantCode    apperr.Code
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"unknown key is claimed", []step{
			{do: "claim", key: "k", hash: "h", at: t0, wantClaimed: true},
		}},
		{"held key is not claimed again", []step{
			{do: "claim", key: "k", hash: "h", at: t0, wantClaimed: true},
			{do: "claim", key: "k", hash: "h", at: t0.Add(time.Second)},
			{do: "claim", key: "k", hash: "other", at: t0.Add(time.Second)},
		}},
		{"completed key returns its answer, even after the lease", []step{
			{do: "claim", key: "k", hash: "h", at: t0, wantClaimed: true},
			{do: "complete", key: "k"},
			{do: "claim", key: "k", hash: "h", at: t0.Add(time.Second), wantDone: true},
			{do: "claim", key: "k", hash: "h", at: lease.Add(time.Hour), wantDone: true},
		}},
		{"released key is claimed afresh", []step{
			{do: "claim", key: "k", hash: "h", at: t0, wantClaimed: true},
			{do: "release", key: "k"},
			{do: "claim", key: "k", hash: "h", at: t0.Add(time.Second), wantClaimed: true},
		}},
		{"completed key is not released", []step{
			{do: "claim", key: "k", hash: "h", at: t0, wantClaimed: true},
			{do: "complete", key: "k"},
			{do: "release", key: "k"},
			{do: "claim", key: "k", hash: "h", at: t0.Add(time.Second), wantDone: true},
		}},
		{"expired lease is taken over by the same request", []step{
			{do: "claim", key: "k", hash: "h", at: t0, wantClaimed: true},
			{do: "claim", key: "k", hash: "h", at: lease.Add(-time.Nanosecond)},
			{do: "claim", key: "k", hash: "h", at: lease, wantClaimed: true},
		}},
		{"expired lease is not taken by another request", []step{
			{do: "claim", key: "k", hash: "h", at: t0, wantClaimed: true},
			{do: "claim", key: "k", hash: "other", at: lease.Add(time.Hour)},
		}},
		{"completing an unknown key", []step{
			{do: "complete", key: "nope", wantCode: apperr.NotFound},
		}},
		{"keys are independent", []step{
			{do: "claim", key: "a", hash: "h", at: t0, wantClaimed: true},
			{do: "claim", key: "b", hash: "h", at: t0, wantClaimed: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := orders.NewMemKeys(orders.NewMemStore())
			for i, s := range tt.steps {
				switch s.do {
				case "claim":
					rec, claimed, err := m.Claim(ctx, s.key, s.hash, s.at, s.at.Add(orders.KeyLease))
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					if claimed != s.wantClaimed || rec.Completed != s.wantDone || rec.Key != s.key {
						t.Errorf("step %d: Claim = %+v, claimed %v; want claimed %v, completed %v", i, rec, claimed, s.wantClaimed, s.wantDone)
					}
					if s.wantDone && string(rec.Response) != "answer-"+s.key {
						t.Errorf("step %d: response %q, want the stored answer", i, rec.Response)
					}
				case "complete":
					if err := m.Complete(ctx, s.key, []byte("answer-"+s.key)); codeOf(err) != s.wantCode {
						t.Errorf("step %d: Complete = %v, want code %q", i, err, s.wantCode)
					}
				case "release":
					if err := m.Release(ctx, s.key); err != nil {
						t.Errorf("step %d: Release = %v", i, err)
					}
				}
			}
		})
	}
}

// A checkout that failed after the money was taken must not give its key
// back: the client's retry would place a new order and charge again. With
// the outbox off (naive's way of calling every step in line) and
// idempotency on, a shipping failure after the charge is such a failure.
func TestPlaceOrderChargedThenFailedKeepsKey(t *testing.T) {
	s := newShop(t)
	st := settingsOf(mode.Budgeted)
	st.Mechanisms.Outbox = false
	s.settings.Store(st)
	s.shipping.err = status.Error(codes.DeadlineExceeded, "carrier did not answer in time")
	first, err := s.svc.PlaceOrder(context.Background(), request())
	if err == nil || first.ChargeID == "" {
		t.Fatalf("first checkout = %+v, %v; want it charged, then failed at shipping", first, err)
	}
	s.shipping.err = nil
	_, _ = s.svc.PlaceOrder(context.Background(), request())
	if n := len(s.payments.charges()); n != 1 {
		t.Errorf("the retry with the same key charged again: %d charges for one checkout", n)
	}
}
