package shop_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/lab/shop"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
)

// budgetLine is one "budget" line of the debug log.
type budgetLine struct {
	Time        time.Time `json:"time"`
	Service     string    `json:"service"`
	Event       string    `json:"event"`
	Method      string    `json:"method"`
	To          string    `json:"to"`
	TraceID     string    `json:"trace_id"`
	Budget      bool      `json:"budget"`
	RemainingMS *float64  `json:"remaining_ms"`
}

// lockedBuffer is a log sink the five services write to at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []budgetLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []budgetLine
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Msg != "budget" {
			continue
		}
		var line budgetLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("budget line %s: %v", sc.Bytes(), err)
		}
		out = append(out, line)
	}
	return out
}

// TestBudgetLinesShowRemainingFalling: at debug level one budgeted
// checkout logs its budget at every hop — on arrival, and before and after
// each call — all under one trace id; within each hop (one request at one
// service: its arrival, then its calls) the remaining budget only falls,
// and every callee arrives with no more than its caller had left before
// the call. The audit event is left out: it is fire-forward, delivered
// from a queue under a lifetime of its own, not the request's budget
// (criticality.md). (Lines are ordered by their time; the figure
// is rounded to a tenth of a millisecond, and two goroutines of one hop —
// the parallel fan-out — may read the clock in one order and log in the
// other, so a rise of up to 1 ms is let through.)
func TestBudgetLinesShowRemainingFalling(t *testing.T) {
	var sink lockedBuffer
	cfg := shop.EphemeralConfig()
	s, err := shop.Start(context.Background(), cfg, slog.New(slog.NewJSONHandler(&sink, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	a, err := postCheckout(context.Background(), http.DefaultClient, s.GatewayURL(), "budget-lines", checkoutBody, "1500")
	if err != nil || a.code != http.StatusCreated {
		t.Fatalf("checkout = %d %s, %v; want 201", a.code, a.body, err)
	}
	if err := s.Stop(); err != nil { // every line written, the audit queue's included
		t.Fatal(err)
	}
	lines := sink.lines(t)
	if len(lines) == 0 {
		t.Fatal("no budget lines at debug level")
	}
	// The checkout's trace: the gateway's arrival on the checkout route.
	var trace string
	for _, l := range lines {
		if l.Service == "gateway" && l.Event == "arrival" {
			trace = l.TraceID
			break
		}
	}
	if trace == "" {
		t.Fatalf("no gateway arrival line with a trace id in %+v", lines)
	}
	var mine []budgetLine
	for _, l := range lines {
		if l.TraceID == trace && !slices.Contains(auditMethods, l.Method) {
			mine = append(mine, l)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].Time.Before(mine[j].Time) })
	const slack = 1.0 // ms
	seen := map[string]bool{}
	last := map[string]float64{} // by hop
	hopOf := map[string]string{} // service → its hop, from its latest arrival
	for i, l := range mine {
		t.Logf("%-8s %-7s %-8s %-45s remaining_ms=%v", l.Service, l.Event, l.To, l.Method, deref(l.RemainingMS))
		seen[l.Service] = true
		if !l.Budget || l.RemainingMS == nil {
			t.Errorf("line %d (%s %s) has no remaining budget: %+v", i, l.Service, l.Event, l)
			continue
		}
		r := *l.RemainingMS
		if l.Event == "arrival" {
			hopOf[l.Service] = l.Service + " " + l.Method
		}
		hop, ok := hopOf[l.Service]
		if !ok {
			t.Errorf("line %d: %s logs a %s before any arrival", i, l.Service, l.Event)
			continue
		}
		if prev, ok := last[hop]; ok && r > prev+slack {
			t.Errorf("line %d: the remaining budget of %s rose from %v to %v ms (%s)", i, hop, prev, r, l.Event)
		}
		last[hop] = r
		if l.Event != "arrival" || l.Service == "gateway" {
			continue
		}
		// The call that brought it: an earlier call line for this method.
		caller := -1.0
		for _, c := range mine[:i] {
			if c.Event == "call" && c.Method == l.Method && c.RemainingMS != nil {
				caller = *c.RemainingMS
			}
		}
		if caller < 0 {
			t.Errorf("line %d: %s's arrival for %s follows no call line", i, l.Service, l.Method)
		} else if r > caller+slack {
			t.Errorf("line %d: %s arrived with %v ms, more than the %v ms its caller had left", i, l.Service, r, caller)
		}
	}
	for _, svc := range []string{"gateway", "orders", "catalog", "payments", "shipping"} {
		if !seen[svc] {
			t.Errorf("no budget line of %s under trace %s", svc, trace)
		}
	}
}

// auditMethods are the audit trail's writes, in line and from the queue.
var auditMethods = []string{paymentsv1.PaymentsService_RecordAudit_FullMethodName, paymentsv1.PaymentsService_RecordAudits_FullMethodName}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
