package payments_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
	"github.com/mercado-lab/mercado/services/payments"
)

func auditEntry(order string) payments.AuditEntry {
	return payments.AuditEntry{OrderID: order, Customer: "ana", TotalCents: 1200, ChargeID: "ch-1",
		RequestID: "req-" + order, ConfirmedAt: time.UnixMilli(1_700_000_000_000).UTC()}
}

// The audit store contract, on memory and PostgreSQL: one entry per
// order, whoever records it and however often.
func TestAuditStoreContract(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		testAuditStore(t, func(*testing.T) payments.AuditStore { return payments.NewMemAuditStore() })
	})
	t.Run("postgres", func(t *testing.T) {
		pgtest.AdminURL(t)
		testAuditStore(t, func(t *testing.T) payments.AuditStore {
			pool, _ := pgtest.Open(t, 8)
			if err := payments.Migrate(context.Background(), pool); err != nil {
				t.Fatal(err)
			}
			s, err := payments.NewPGAuditStore(pool)
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
}

func testAuditStore(t *testing.T, newStore func(*testing.T) payments.AuditStore) {
	ctx := context.Background()
	t.Run("a second record of an order returns the first", func(t *testing.T) {
		s := newStore(t)
		first := auditEntry("ord_1")
		first.RecordedAt = time.UnixMilli(1_700_000_001_000).UTC()
		got, err := s.Record(ctx, first)
		if err != nil || got.OrderID != "ord_1" || !got.RecordedAt.Equal(first.RecordedAt) {
			t.Fatalf("Record = %+v, %v", got, err)
		}
		again := first
		again.RecordedAt, again.TotalCents = first.RecordedAt.Add(time.Minute), 1
		got, err = s.Record(ctx, again)
		if err != nil || !got.RecordedAt.Equal(first.RecordedAt) || got.TotalCents != first.TotalCents {
			t.Errorf("Record again = %+v, %v; want the first entry back", got, err)
		}
		if n, err := s.Count(ctx); err != nil || n != 1 {
			t.Errorf("Count = %d, %v; want 1", n, err)
		}
	})
	t.Run("concurrent records of one order make one entry", func(t *testing.T) {
		s := newStore(t)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				e := auditEntry("ord_1")
				e.RecordedAt = time.UnixMilli(int64(1_700_000_000_000 + i)).UTC()
				if _, err := s.Record(ctx, e); err != nil {
					t.Errorf("Record: %v", err)
				}
			})
		}
		wg.Wait()
		if _, err := s.Record(ctx, auditEntry("ord_2")); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Count(ctx); err != nil || n != 2 {
			t.Errorf("Count = %d, %v; want 2", n, err)
		}
	})
}

func newAuditTrail(t *testing.T, set faults.Set) *payments.AuditTrail {
	t.Helper()
	a, err := payments.NewAuditTrail(payments.NewMemAuditStore(), faults.NewInjector(set, live(mode.Budgeted)))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAuditTrailRecord(t *testing.T) {
	if _, err := payments.NewAuditTrail(nil, faults.NewInjector(nil, live(mode.Budgeted))); err == nil {
		t.Error("NewAuditTrail without a store succeeded")
	}
	a := newAuditTrail(t, nil)
	ctx := context.Background()
	got, err := a.Record(ctx, auditEntry("ord_1"))
	if err != nil || got.RecordedAt.IsZero() {
		t.Fatalf("Record = %+v, %v; want an entry with its recording time", got, err)
	}
	for _, tc := range []struct {
		name   string
		change func(*payments.AuditEntry)
	}{
		{"no order id", func(e *payments.AuditEntry) { e.OrderID = "" }},
		{"order id over 64", func(e *payments.AuditEntry) { e.OrderID = string(make([]byte, 65)) }},
		{"negative total", func(e *payments.AuditEntry) { e.TotalCents = -1 }},
		{"no confirmation time", func(e *payments.AuditEntry) { e.ConfirmedAt = time.Time{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := auditEntry("ord_2")
			tc.change(&e)
			var ae *apperr.Error
			if _, err := a.Record(ctx, e); !errors.As(err, &ae) || ae.Code != apperr.Invalid {
				t.Errorf("Record = %v, want Invalid", err)
			}
		})
	}
	if n, _ := a.Count(ctx); n != 1 {
		t.Errorf("Count = %d after one good record and four bad ones, want 1", n)
	}
}

// RecordAudit has its own fault method: the trail can be made to fail
// (Unavailable) or hang while charges go on.
func TestAuditTrailFaults(t *testing.T) {
	a := newAuditTrail(t, faults.Set{faults.PaymentsRecordAudit: {ErrorRate: 1}})
	var ae *apperr.Error
	if _, err := a.Record(context.Background(), auditEntry("ord_1")); !errors.As(err, &ae) || ae.Code != apperr.Unavailable {
		t.Errorf("Record with the trail failing = %v, want Unavailable", err)
	}
	a = newAuditTrail(t, faults.Set{faults.PaymentsRecordAudit: {Hang: time.Minute}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := a.Record(ctx, auditEntry("ord_1")); !errors.As(err, &ae) || ae.Code != apperr.Timeout {
		t.Errorf("Record with the trail hung = %v, want Timeout", err)
	}
	if n, _ := a.Count(context.Background()); n != 0 {
		t.Errorf("a failed write left %d entries", n)
	}
}

func TestRecordAuditGRPC(t *testing.T) {
	c, _ := startPayments(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := &paymentsv1.AuditEvent{OrderId: "ord_1", Customer: "ana", TotalCents: 1200, ChargeId: "ch-1", ConfirmedUnixMs: 1_700_000_000_000}
	first, err := c.RecordAudit(ctx, ev)
	if err != nil || first.GetOrderId() != "ord_1" || first.GetRecordedUnixMs() == 0 {
		t.Fatalf("RecordAudit = %v, %v", first, err)
	}
	again, err := c.RecordAudit(ctx, ev)
	if err != nil || again.GetRecordedUnixMs() != first.GetRecordedUnixMs() {
		t.Errorf("RecordAudit again = %v, %v; want the first entry %v", again, err, first)
	}
	if _, err := c.RecordAudit(ctx, &paymentsv1.AuditEvent{OrderId: "ord_2"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("RecordAudit without a confirmation time = %v, want InvalidArgument", err)
	}
}
