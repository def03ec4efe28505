package payments_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	"github.com/mercado-lab/mercado/internal/sim"
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
	record := func(t *testing.T, s payments.AuditStore, e payments.AuditEntry) payments.AuditEntry {
		t.Helper()
		got, err := s.Record(ctx, []payments.AuditEntry{e})
		if err != nil || len(got) != 1 {
			t.Fatalf("Record = %+v, %v", got, err)
		}
		return got[0]
	}
	count := func(t *testing.T, s payments.AuditStore, want int) {
		t.Helper()
		if n, err := s.Count(ctx); err != nil || n != want {
			t.Errorf("Count = %d, %v; want %d", n, err, want)
		}
	}
	t.Run("a second record of an order returns the first", func(t *testing.T) {
		s := newStore(t)
		first := auditEntry("ord_1")
		first.RecordedAt = time.UnixMilli(1_700_000_001_000).UTC()
		if got := record(t, s, first); got.OrderID != "ord_1" || !got.RecordedAt.Equal(first.RecordedAt) {
			t.Fatalf("Record = %+v", got)
		}
		again := first
		again.RecordedAt, again.TotalCents = first.RecordedAt.Add(time.Minute), 1
		if got := record(t, s, again); !got.RecordedAt.Equal(first.RecordedAt) || got.TotalCents != first.TotalCents {
			t.Errorf("Record again = %+v; want the first entry back", got)
		}
		count(t, s, 1)
	})
	t.Run("a batch keeps the first entry of each order, in its order", func(t *testing.T) {
		s := newStore(t)
		old := auditEntry("ord_old")
		old.RecordedAt = time.UnixMilli(1_700_000_000_500).UTC()
		record(t, s, old)

		at := time.UnixMilli(1_700_000_001_000).UTC()
		a, b, a2, old2 := auditEntry("ord_a"), auditEntry("ord_b"), auditEntry("ord_a"), auditEntry("ord_old")
		a.RecordedAt, b.RecordedAt, a2.RecordedAt, old2.RecordedAt = at, at, at, at
		a2.TotalCents, old2.TotalCents = 1, 1
		got, err := s.Record(ctx, []payments.AuditEntry{a, old2, b, a2})
		if err != nil || len(got) != 4 {
			t.Fatalf("Record = %+v, %v; want 4 results", got, err)
		}
		for i, want := range []payments.AuditEntry{a, old, b, a} {
			if got[i].OrderID != want.OrderID || got[i].TotalCents != want.TotalCents || !got[i].RecordedAt.Equal(want.RecordedAt) ||
				got[i].RequestID != want.RequestID || !got[i].ConfirmedAt.Equal(want.ConfirmedAt) {
				t.Errorf("result %d = %+v, want %+v", i, got[i], want)
			}
		}
		count(t, s, 3)
	})
	t.Run("concurrent records of one order make one entry", func(t *testing.T) {
		s := newStore(t)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				e := auditEntry("ord_1")
				e.RecordedAt = time.UnixMilli(int64(1_700_000_000_000 + i)).UTC()
				if _, err := s.Record(ctx, []payments.AuditEntry{e}); err != nil {
					t.Errorf("Record: %v", err)
				}
			})
		}
		wg.Wait()
		record(t, s, auditEntry("ord_2"))
		count(t, s, 2)
	})
	t.Run("concurrent batches over the same orders agree on each entry", func(t *testing.T) {
		s := newStore(t)
		const writers, orders = 8, 20
		results := make([][]payments.AuditEntry, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				batch := make([]payments.AuditEntry, orders)
				for i := range batch {
					// Each writer its own order of the orders, and its own
					// recording time.
					batch[i] = auditEntry(fmt.Sprintf("ord_%02d", (i+w)%orders))
					batch[i].RecordedAt = time.UnixMilli(int64(1_700_000_000_000 + w)).UTC()
				}
				got, err := s.Record(ctx, batch)
				if err != nil {
					t.Errorf("writer %d: Record: %v", w, err)
				}
				results[w] = got
			})
		}
		wg.Wait()
		first := map[string]time.Time{}
		for w, got := range results {
			for i, e := range got {
				if want := fmt.Sprintf("ord_%02d", (i+w)%orders); e.OrderID != want {
					t.Fatalf("writer %d, result %d is %s, want %s", w, i, e.OrderID, want)
				}
				if at, ok := first[e.OrderID]; !ok {
					first[e.OrderID] = e.RecordedAt
				} else if !at.Equal(e.RecordedAt) {
					t.Errorf("%s: writers were answered two entries, recorded at %v and %v", e.OrderID, at, e.RecordedAt)
				}
			}
		}
		count(t, s, orders)
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
	a := newAuditTrail(t, faults.Set{sim.PaymentsRecordAudit: {ErrorRate: 1}})
	var ae *apperr.Error
	if _, err := a.Record(context.Background(), auditEntry("ord_1")); !errors.As(err, &ae) || ae.Code != apperr.Unavailable {
		t.Errorf("Record with the trail failing = %v, want Unavailable", err)
	}
	a = newAuditTrail(t, faults.Set{sim.PaymentsRecordAudit: {Hang: time.Minute}})
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

// A batch answers one result per entry: an entry that is wrong is refused
// alone, the others recorded, an order sent twice gets its first entry;
// a batch that is empty or too large is refused whole.
func TestAuditTrailRecordBatch(t *testing.T) {
	ctx := context.Background()
	a := newAuditTrail(t, nil)
	if _, err := a.Record(ctx, auditEntry("ord_old")); err != nil {
		t.Fatal(err)
	}
	bad := auditEntry("ord_bad")
	bad.TotalCents = -1
	twice := auditEntry("ord_1")
	twice.TotalCents = 1
	results, err := a.RecordBatch(ctx, []payments.AuditEntry{auditEntry("ord_1"), bad, auditEntry("ord_old"), twice, auditEntry("ord_2")})
	if err != nil || len(results) != 5 {
		t.Fatalf("RecordBatch = %+v, %v; want 5 results", results, err)
	}
	var ae *apperr.Error
	if !errors.As(results[1].Err, &ae) || ae.Code != apperr.Invalid || !strings.Contains(ae.Message, "total_cents") {
		t.Errorf("the entry with a negative total: %v, want Invalid naming total_cents", results[1].Err)
	}
	for _, i := range []int{0, 2, 3, 4} {
		if results[i].Err != nil || results[i].Entry.RecordedAt.IsZero() {
			t.Errorf("result %d = %+v, want an entry", i, results[i])
		}
	}
	if results[3].Entry.TotalCents != 1200 || !results[3].Entry.RecordedAt.Equal(results[0].Entry.RecordedAt) {
		t.Errorf("ord_1 sent twice: %+v, want its first entry %+v", results[3].Entry, results[0].Entry)
	}
	if n, _ := a.Count(ctx); n != 3 {
		t.Errorf("Count = %d, want ord_old, ord_1 and ord_2", n)
	}

	full := make([]payments.AuditEntry, payments.MaxAuditBatch)
	for i := range full {
		full[i] = auditEntry(fmt.Sprintf("ord_full_%d", i))
	}
	if rs, err := a.RecordBatch(ctx, full); err != nil || len(rs) != payments.MaxAuditBatch {
		t.Errorf("a batch of %d = %d results, %v; want it recorded", payments.MaxAuditBatch, len(rs), err)
	}
	for _, tc := range []struct {
		name    string
		entries []payments.AuditEntry
		says    string
	}{
		{"empty", nil, "events are required"},
		{"too large", append(full, auditEntry("ord_one_more")), fmt.Sprintf("at most %d events, got %d", payments.MaxAuditBatch, payments.MaxAuditBatch+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := a.RecordBatch(ctx, tc.entries); !errors.As(err, &ae) || ae.Code != apperr.Invalid || !strings.Contains(ae.Message, tc.says) {
				t.Errorf("RecordBatch = %v, want Invalid saying %q", err, tc.says)
			}
		})
	}
	if n, _ := a.Count(ctx); n != 3+payments.MaxAuditBatch {
		t.Errorf("Count = %d after the refused batches, want %d", n, 3+payments.MaxAuditBatch)
	}
}

// A batch is one write: its simulated work is done once per call, however
// many entries it carries; a write that fails records none of them; and a
// batch with nothing valid in it writes nothing.
func TestAuditTrailBatchIsOneWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const took = 100 * time.Millisecond
		a := newAuditTrail(t, faults.Set{sim.PaymentsRecordAudit: {Latency: took}})
		batch := make([]payments.AuditEntry, 50)
		for i := range batch {
			batch[i] = auditEntry(fmt.Sprintf("ord_%d", i))
		}
		start := time.Now()
		if _, err := a.RecordBatch(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != took {
			t.Errorf("a batch of 50 took %v, want one write's %v", d, took)
		}
	})
	a := newAuditTrail(t, faults.Set{sim.PaymentsRecordAudit: {ErrorRate: 1}})
	var ae *apperr.Error
	if _, err := a.RecordBatch(context.Background(), []payments.AuditEntry{auditEntry("ord_1"), auditEntry("ord_2")}); !errors.As(err, &ae) || ae.Code != apperr.Unavailable {
		t.Errorf("RecordBatch with the trail failing = %v, want Unavailable", err)
	}
	bad := auditEntry("")
	if rs, err := a.RecordBatch(context.Background(), []payments.AuditEntry{bad}); err != nil || len(rs) != 1 || rs[0].Err == nil {
		t.Errorf("a batch of one invalid entry with the trail failing = %+v, %v; want the entry refused, no write tried", rs, err)
	}
	if n, _ := a.Count(context.Background()); n != 0 {
		t.Errorf("failed writes left %d entries", n)
	}
}

func TestRecordAuditsGRPC(t *testing.T) {
	c, _ := startPayments(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := func(order string) *paymentsv1.AuditEvent {
		return &paymentsv1.AuditEvent{OrderId: order, Customer: "ana", TotalCents: 1200, ChargeId: "ch-1", ConfirmedUnixMs: 1_700_000_000_000}
	}
	first, err := c.RecordAudit(ctx, ev("ord_1"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.RecordAudits(ctx, &paymentsv1.RecordAuditsRequest{Events: []*paymentsv1.AuditEvent{
		ev("ord_2"), {OrderId: "ord_3"}, ev("ord_1"), ev("ord_2"),
	}})
	if err != nil || len(resp.GetResults()) != 4 {
		t.Fatalf("RecordAudits = %v, %v; want 4 results", resp, err)
	}
	rs := resp.GetResults()
	if e := rs[0].GetEntry(); e.GetOrderId() != "ord_2" || e.GetRecordedUnixMs() == 0 {
		t.Errorf("result 0 = %v, want ord_2's entry", rs[0])
	}
	if no := rs[1].GetRefused(); codes.Code(no.GetCode()) != codes.InvalidArgument || !strings.Contains(no.GetMessage(), "confirmed_unix_ms") {
		t.Errorf("result 1 = %v, want refused InvalidArgument naming confirmed_unix_ms", rs[1])
	}
	if e := rs[2].GetEntry(); e.GetRecordedUnixMs() != first.GetRecordedUnixMs() {
		t.Errorf("result 2 = %v, want ord_1's first entry %v", rs[2], first)
	}
	if e := rs[3].GetEntry(); e.GetRecordedUnixMs() != rs[0].GetEntry().GetRecordedUnixMs() {
		t.Errorf("result 3 = %v, want ord_2's entry as result 0 has it", rs[3])
	}
	for _, tc := range []struct {
		name   string
		events int
	}{{"empty", 0}, {"too large", payments.MaxAuditBatch + 1}} {
		t.Run(tc.name, func(t *testing.T) {
			req := &paymentsv1.RecordAuditsRequest{}
			for i := range tc.events {
				req.Events = append(req.Events, ev(fmt.Sprintf("ord_big_%d", i)))
			}
			if _, err := c.RecordAudits(ctx, req); status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "events") {
				t.Errorf("RecordAudits with %d events = %v, want InvalidArgument", tc.events, err)
			}
		})
	}
}

// A batch is refused at the door as RecordAudit is: the refuse rate of the
// trail's write applies to both.
func TestRecordAuditsRefusedAtTheDoor(t *testing.T) {
	cfg := payments.DefaultConfig()
	cfg.Faults = faults.Set{sim.PaymentsRecordAudit: {RefuseRate: 1}}
	c, _ := startPaymentsWith(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := &paymentsv1.RecordAuditsRequest{Events: []*paymentsv1.AuditEvent{{OrderId: "ord_1", ConfirmedUnixMs: 1_700_000_000_000}}}
	if _, err := c.RecordAudits(ctx, req); status.Code(err) != codes.Unavailable || apperr.ReasonOf(err) != apperr.ReasonNotProcessed {
		t.Errorf("RecordAudits = %v, want Unavailable marked %s", err, apperr.ReasonNotProcessed)
	}
}
