package orders_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/services/orders"
)

// auditMetrics are orders' metrics for a test, read as Prometheus reads
// them.
type auditMetrics struct{ m *telemetry.Metrics }

func newAuditMetrics(t *testing.T) auditMetrics {
	t.Helper()
	m, err := telemetry.New("orders")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return auditMetrics{m}
}

// events returns mercado_audit_events_total by outcome, and
// mercado_audit_retries_total.
func (a auditMetrics) events(t *testing.T) (map[string]float64, float64) {
	t.Helper()
	rec := httptest.NewRecorder()
	a.m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, m := range fams[telemetry.NameAuditEvents].GetMetric() {
		out[label(m, "outcome")] = m.GetCounter().GetValue()
	}
	var retries float64
	for _, m := range fams[telemetry.NameAuditRetries].GetMetric() {
		retries += m.GetCounter().GetValue()
	}
	return out, retries
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// placeOrders places n checkouts, each with a key of its own.
func (s *shop) placeOrders(t *testing.T, n int) []orders.Order {
	t.Helper()
	var out []orders.Order
	for i := range n {
		req := request()
		req.IdempotencyKey, req.RequestID = fmt.Sprintf("key-%d", i), fmt.Sprintf("req-%d", i)
		o, err := s.svc.PlaceOrder(t.Context(), req)
		if err != nil || o.Status != orders.StatusConfirmed {
			t.Fatalf("checkout %d = %s, %v", i, o.Status, err)
		}
		out = append(out, o)
	}
	return out
}

// A quiet shop's event is written at once, in a batch of its own: a
// worker never waits for a batch to fill.
func TestAuditQueueWritesALoneEventAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newShop(t)
		s.rebuild(t, nil)
		stop := s.svc.StartAudit()
		defer stop(time.Second)
		start := time.Now()
		s.placeOrders(t, 1)
		synctest.Wait()
		if s.audit.count() != 1 || time.Since(start) != 0 {
			t.Errorf("the trail holds %d events %v after the checkout, want its 1 with no wait at all", s.audit.count(), time.Since(start))
		}
		if len(s.audit.batches) != 1 || s.audit.batches[0] != 1 {
			t.Errorf("writes of %v events, want one of 1", s.audit.batches)
		}
	})
}

// Under load the workers write what has gathered while they were busy:
// 200 checkouts at once, against a trail that takes 10 ms a write, make
// a few batches, not 200 writes, and each event is counted once.
func TestAuditQueueBatchesUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const checkouts, workers = 200, 4
		s := newShop(t)
		m := newAuditMetrics(t)
		s.rebuild(t, func(d *orders.Deps) {
			d.AuditQueue = orders.AuditSettings{Workers: workers}
			d.Metrics = m.m
		})
		s.audit.delay = 10 * time.Millisecond
		stop := s.svc.StartAudit()
		start := time.Now()
		s.placeOrders(t, checkouts)
		stop(10 * time.Second)
		// The checkouts took no time: each worker took at most one batch
		// then, and what was left when its write ended 10 ms later.
		if took := time.Since(start); took > 20*time.Millisecond {
			t.Errorf("the queue took %v to write %d events, want two rounds of 10 ms writes at most", took, checkouts)
		}
		sum := 0
		for _, n := range s.audit.batches {
			if n > orders.MaxAuditBatch {
				t.Errorf("a batch of %d events, more than the %d a write may carry", n, orders.MaxAuditBatch)
			}
			sum += n
		}
		if n := len(s.audit.batches); n > 2*workers || sum != checkouts {
			t.Errorf("%d writes carried %d events (%v), want %d events in at most %d writes", n, sum, s.audit.batches, checkouts, 2*workers)
		}
		if s.audit.count() != checkouts {
			t.Errorf("the trail holds %d events, want %d", s.audit.count(), checkouts)
		}
		got, retries := m.events(t)
		if got[telemetry.AuditQueued] != checkouts || got[telemetry.AuditRecorded] != checkouts || retries != 0 {
			t.Errorf("queued %v, recorded %v, retries %v; want %d, %d, 0", got[telemetry.AuditQueued], got[telemetry.AuditRecorded], retries, checkouts, checkouts)
		}
	})
}

// A batch whose answer was lost after the trail recorded it is sent again
// whole, and each event ends recorded once: the trail keeps the first
// entry of each order.
func TestAuditQueueRetriesAFailedBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const checkouts = 5
		s := newShop(t)
		m := newAuditMetrics(t)
		s.rebuild(t, func(d *orders.Deps) {
			d.AuditQueue = orders.AuditSettings{Workers: 1, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
			d.Metrics = m.m
		})
		s.audit.lose = status.Error(codes.Unavailable, "the answer was lost")
		s.placeOrders(t, checkouts) // queued before the worker runs: one batch
		stop := s.svc.StartAudit()
		time.Sleep(time.Second)
		stop(time.Second)
		if want := []int{checkouts, checkouts}; fmt.Sprint(s.audit.batches) != fmt.Sprint(want) {
			t.Errorf("writes of %v events, want the batch %v and its retry", s.audit.batches, want)
		}
		if s.audit.count() != checkouts {
			t.Errorf("the trail holds %d events, want %d", s.audit.count(), checkouts)
		}
		got, retries := m.events(t)
		if got[telemetry.AuditRecorded] != checkouts || retries != 1 {
			t.Errorf("recorded %v, retries %v; want %d events recorded once each, in 1 write tried again", got[telemetry.AuditRecorded], retries, checkouts)
		}
	})
}

// Each event of a batch has its own outcome: one the trail refuses for
// good is dropped alone, counted and logged, while the rest are recorded;
// one it refuses for now is tried again alone.
func TestAuditQueueSettlesEachEvent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		code    codes.Code
		batches []int
		outcome string
	}{
		{"refused for good", codes.InvalidArgument, []int{3}, telemetry.AuditDroppedRejected},
		{"refused for now", codes.Unavailable, []int{3, 1}, telemetry.AuditRecorded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newShop(t)
				m := newAuditMetrics(t)
				s.rebuild(t, func(d *orders.Deps) {
					d.AuditQueue = orders.AuditSettings{Workers: 1, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
					d.Metrics = m.m
				})
				placed := s.placeOrders(t, 3)
				odd := placed[1].ID
				refusals := 0
				s.audit.refuse = func(e orders.AuditEvent) error {
					if e.OrderID != odd || refusals > 0 {
						return nil
					}
					refusals++
					return status.Error(tc.code, "not this one")
				}
				stop := s.svc.StartAudit()
				time.Sleep(time.Second)
				stop(time.Second)
				if fmt.Sprint(s.audit.batches) != fmt.Sprint(tc.batches) {
					t.Errorf("writes of %v events, want %v", s.audit.batches, tc.batches)
				}
				got, _ := m.events(t)
				wantRecorded := 2.0
				if tc.outcome == telemetry.AuditRecorded {
					wantRecorded = 3
				}
				if got[telemetry.AuditRecorded] != wantRecorded || got[tc.outcome] < 1 {
					t.Errorf("outcomes %v; want %v recorded and %s for %s", got, wantRecorded, tc.outcome, odd)
				}
				logged := strings.Contains(s.logs.String(), "the trail refused it") && strings.Contains(s.logs.String(), odd)
				if refused := tc.code == codes.InvalidArgument; logged != refused {
					t.Errorf("log = %s; want the refused event's order logged: %v", s.logs.String(), refused)
				}
			})
		})
	}
}
