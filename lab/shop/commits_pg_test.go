package shop_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/postgres"
	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/lab/shop"
)

// What a PostgreSQL checkout may commit, per mode (docs/performance.md
// says where each commit comes from):
//
//   - on its critical path: the commits made while serving it, which the
//     answer waits for one after the other. Naive: orders records the
//     order, catalog reserves, the payment provider records its answer
//     under the payment key, shipping books, orders records the outcome,
//     payments records the audit entry in line — 6. Budgeted: the key's
//     claim goes with the order's insert and its answer with the outcome,
//     and the audit entry leaves the critical path — 5.
//   - deferred, per checkout: the commits of work nobody waits for, the
//     workers' and the audit queue's (budgeted: at most one audit write
//     per checkout, fewer when the queue's workers find several events
//     waiting and write them in one batch), with the workers' polls,
//     which run whether or not there are checkouts, measured while the
//     shop is idle and taken away.
var commitBounds = map[mode.Mode]struct{ critical, deferred float64 }{
	mode.Naive:    {critical: 6, deferred: 0.5},
	mode.Budgeted: {critical: 5, deferred: 1.5},
}

// TestPostgresCommitsPerCheckout counts the transactions a checkout
// commits on PostgreSQL, from the counters of every service's pool
// (GET /admin/db; internal/postgres/counter.go, whose figures agree with
// the server's pg_stat_database.xact_commit — TestCountsAgreeWithTheServer),
// so neither figure can drift up unnoticed: for checkouts one after the
// other, and for checkouts sent several at a time, when the audit queue
// may find events waiting and batch them; and, budgeted, with the trail's
// write made slow (a fault's latency), so that the queue's workers are
// busy and events gather. How many it batches depends on how busy its
// workers are, a matter of the machine's speed, so the figures are
// reported and bounded as the first is, not asserted lower.
func TestPostgresCommitsPerCheckout(t *testing.T) {
	db := pgtest.NewDatabase(t)
	const checkouts, warm, clients = 100, 5, 16
	const slowWrite = 20 * time.Millisecond
	for _, m := range []mode.Mode{mode.Naive, mode.Budgeted} {
		t.Run(string(m), func(t *testing.T) {
			cfg := shop.EphemeralConfig()
			cfg.Shared.Mode = m
			// Caps no busy machine reaches: a call that outlasts its cap
			// is retried, and the retry commits again (a retried catalog
			// call made 7.05 commits a checkout with a core kept busy).
			o := &cfg.Orders
			o.CatalogCap, o.FraudCap, o.PaymentsCap, o.ShippingCap = 10*time.Second, 10*time.Second, 10*time.Second, 10*time.Second
			s := startShopOn(t, cfg, db)
			for i := range warm {
				if r := s.checkout(t, fmt.Sprintf("commits-%s-warm-%d", m, i)); r.status != http.StatusCreated {
					t.Fatalf("checkout %d: %d %s", i, r.status, r.body)
				}
			}
			audited := warm
			s.waitAudited(t, audited)

			// The workers' polls, with nothing to do: they poll in bursts
			// (orders' four workers every 250 ms), so a few seconds of them.
			idleFrom, idleStart := s.commitsAt(t)
			time.Sleep(4 * time.Second)
			idleTo, idleEnd := s.commitsAt(t)
			idle, idleFor := since(idleTo, idleFrom), idleEnd.Sub(idleStart)

			type round struct {
				at        int
				slowWrite time.Duration // the trail's write's fault latency
			}
			rounds := []round{{1, 0}, {clients, 0}}
			if m == mode.Budgeted {
				rounds = append(rounds, round{clients, slowWrite})
			}
			payments := admin.Client{URL: "http://" + s.Payments.AdminAddr, HTTP: s.client}
			for _, r := range rounds {
				at, how := r.at, fmt.Sprintf("%d at a time", r.at)
				if r.slowWrite > 0 {
					how += fmt.Sprintf(", the audit write taking %v", r.slowWrite)
					if _, err := payments.SetFault(t.Context(), sim.PaymentsRecordAudit, faults.Spec{Latency: r.slowWrite}); err != nil {
						t.Fatal(err)
					}
				}
				from, start := s.commitsAt(t)
				s.checkoutsAtOnce(t, fmt.Sprintf("commits-%s-%d-%v", m, at, r.slowWrite), checkouts, at)
				critical := since(s.commits(t), from).RequestCommits
				audited += checkouts
				s.waitAudited(t, audited)
				to, end := s.commitsAt(t)
				all, took := since(to, from), end.Sub(start)
				polls := float64(idle.DeferredCommits) * took.Seconds() / idleFor.Seconds()

				perCritical := float64(critical) / checkouts
				perDeferred := (float64(all.DeferredCommits) - polls) / checkouts
				t.Logf("%s, %s: %d checkouts, %d commits on their critical path (%.2f each); %d deferred in %v, of which about %.0f the workers' polls (%d in %v idle): %.2f deferred per checkout",
					m, how, checkouts, critical, perCritical, all.DeferredCommits, took.Round(time.Millisecond), polls, idle.DeferredCommits, idleFor.Round(time.Millisecond), perDeferred)
				bound := commitBounds[m]
				if perCritical > bound.critical {
					t.Errorf("%s, %s: %.2f commits per checkout on its critical path, want at most %.0f", m, how, perCritical, bound.critical)
				}
				if perCritical < 1 {
					t.Errorf("%s, %s: %.2f commits per checkout: the count missed the checkouts' own", m, how, perCritical)
				}
				if perDeferred > bound.deferred {
					t.Errorf("%s, %s: %.2f deferred commits per checkout, want at most %.1f", m, how, perDeferred, bound.deferred)
				}
				if open := s.openOnceIdle(t); open != 0 {
					t.Errorf("%s, %s: %d transactions still open with the shop idle for %v", m, how, open, idleOpenFor)
				}
				if t.Failed() {
					t.Logf("%s, %s: each service's counters now: %s", m, how, s.commitsByService(t))
				}
				if r.slowWrite > 0 {
					if _, err := payments.ClearFaults(t.Context(), ""); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// checkoutsAtOnce makes n checkouts, clients at a time, each under a key
// of its own.
func (s *pgShop) checkoutsAtOnce(t *testing.T, prefix string, n, clients int) {
	t.Helper()
	next := make(chan int)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := range next {
				if err := s.tryCheckout(fmt.Sprintf("%s-%d", prefix, i)); err != nil {
					t.Errorf("checkout %d: %v", i, err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// tryCheckout is checkout for a goroutine other than the test's: an error
// instead of t.Fatal, and one for an answer other than 201.
func (s *pgShop) tryCheckout(key string) error {
	req, err := http.NewRequest(http.MethodPost, s.GatewayURL()+"/api/checkout",
		strings.NewReader(`{"customer":"pg","items":[{"sku":"mug-stoneware","qty":1}],"address":"1 Test Way"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("%s %s", resp.Status, b)
	}
	return nil
}

// commits sums the commit counters of every service that has a database.
func (s *pgShop) commits(t *testing.T) postgres.Counts {
	t.Helper()
	var sum postgres.Counts
	for _, p := range []*serve.Process{s.Orders, s.Catalog, s.Payments, s.Shipping} {
		var st serve.DBStats
		s.getJSON(t, "http://"+p.AdminAddr+"/admin/db", &st)
		sum.RequestCommits += st.RequestCommits
		sum.DeferredCommits += st.DeferredCommits
		sum.OpenTransactions += st.OpenTransactions
	}
	return sum
}

// idleOpenFor is how long a shop with no checkouts may take to end the
// transactions it has open: a worker's poll may be in one when the
// counters are read, and on a busy machine it may last a while; one held
// across a call, or never ended, stays open.
const idleOpenFor = 5 * time.Second

// openOnceIdle is how many transactions the shop has open once they have
// had idleOpenFor to end: none, unless one was left open.
func (s *pgShop) openOnceIdle(t *testing.T) int64 {
	t.Helper()
	deadline := time.Now().Add(idleOpenFor)
	for {
		open := s.commits(t).OpenTransactions
		if open == 0 || time.Now().After(deadline) {
			return open
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// commitsByService is each service's counters, for a failure's message.
func (s *pgShop) commitsByService(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []*serve.Process{s.Orders, s.Catalog, s.Payments, s.Shipping} {
		var st serve.DBStats
		s.getJSON(t, "http://"+p.AdminAddr+"/admin/db", &st)
		fmt.Fprintf(&b, "%s %+v; ", p.Name, st.Counts)
	}
	// A call retried (its own cap ran out on a slow machine) commits
	// again: say so.
	resp, err := s.client.Get("http://" + s.Orders.AdminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "mercado_retries_total") {
			fmt.Fprintf(&b, "orders %s; ", strings.TrimSpace(line))
		}
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// commitsAt is commits and when they were read: halfway through reading
// them.
func (s *pgShop) commitsAt(t *testing.T) (postgres.Counts, time.Time) {
	t.Helper()
	before := time.Now()
	c := s.commits(t)
	return c, before.Add(time.Since(before) / 2)
}

// since is c less an earlier reading; the open transactions are c's own.
func since(c, earlier postgres.Counts) postgres.Counts {
	return postgres.Counts{RequestCommits: c.RequestCommits - earlier.RequestCommits,
		DeferredCommits: c.DeferredCommits - earlier.DeferredCommits, OpenTransactions: c.OpenTransactions}
}

// waitAudited waits until payments' audit trail holds n entries: the
// audit queue has written what it was given.
func (s *pgShop) waitAudited(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var a struct{ Entries int }
		s.getJSON(t, "http://"+s.Payments.AdminAddr+"/admin/audit", &a)
		if a.Entries >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit trail holds %d entries, want %d", a.Entries, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *pgShop) getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := s.client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
