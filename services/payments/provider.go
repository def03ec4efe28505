package payments

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/sim"
)

// provider is the simulated payment provider, and it remembers, as real
// providers do: each payment key's first answer is kept in its Store (its
// own system: the psp schema on PostgreSQL) and given again to anyone who
// asks under that key, so a key is charged at most once however often it
// is sent. Payments keeps no record of its own: asking the provider by
// key is how it, and the orders' reconciler through it, learn what
// happened to a charge.
//
// The provider's work (its simulated time, and the faults' declines) runs
// in payments' process, so a charge the process dies in the middle of
// never reached the provider: the key stays unknown, and voiding it is
// safe.
type provider struct {
	work  sim.Simulator
	store Store
	now   func() time.Time

	mu sync.Mutex
	// answering holds, for each key this process is working on, a channel
	// closed when the provider has answered it.
	answering map[string]chan struct{}
	// recent holds the last answers this process gave, so that a repeated
	// key — a retry, most often — is answered at once, without the
	// provider's time or a read of its store; ring is their keys, the
	// oldest at next.
	recent map[string]Charge
	ring   [recentAnswers]string
	next   int
}

// recentAnswers is how many answers the provider keeps at hand: far more
// than arrive in the time a checkout's retries take.
const recentAnswers = 4096

func newProvider(work sim.Simulator, store Store) *provider {
	return &provider{work: work, store: store, now: time.Now,
		answering: map[string]chan struct{}{}, recent: map[string]Charge{}}
}

// charge takes c.AmountCents under c.PaymentKey and returns the key's
// answer: this call's, or the first one given under the key. A call made
// while another of this process works on the key waits for that one's
// answer. The answer is remembered whatever it is, a decline included;
// the error is sim.ErrInjected when this call's work was declined, and
// ctx's when ctx ended before any answer, in which case nothing is
// remembered.
//
// The store is not read first: its record is what finds an answer older
// than the recent ones, so the usual charge, under a new key, costs the
// provider one commit, and a repeated key this process no longer has at
// hand costs the provider's time again, never a second charge.
func (p *provider) charge(ctx context.Context, c Charge) (Charge, error) {
	c.CreatedAt = p.now()
	known, done, err := p.begin(ctx, c.PaymentKey)
	if err != nil || done == nil {
		return known, err
	}
	defer close(done)
	werr := p.work.Work(ctx, sim.PaymentsCreateCharge)
	c.Status = StatusSucceeded
	switch {
	case errors.Is(werr, sim.ErrInjected):
		c.Status = StatusFailed
	case werr != nil:
		p.end(c.PaymentKey, Charge{})
		return Charge{}, werr
	}
	stored, created, err := p.store.Record(ctx, c)
	p.end(c.PaymentKey, stored)
	if err != nil {
		return Charge{}, err
	}
	if created && stored.Status == StatusFailed {
		return stored, werr
	}
	return stored, nil
}

// begin returns the answer this process has at hand for key, waiting for
// a call of its own that is working on it; or, when there is none, marks
// key as being answered here and returns the channel to close when done.
func (p *provider) begin(ctx context.Context, key string) (Charge, chan struct{}, error) {
	for {
		p.mu.Lock()
		if c, ok := p.recent[key]; ok {
			p.mu.Unlock()
			return c, nil, nil
		}
		other, busy := p.answering[key]
		if !busy {
			done := make(chan struct{})
			p.answering[key] = done
			p.mu.Unlock()
			return Charge{}, done, nil
		}
		p.mu.Unlock()
		select {
		case <-other:
		case <-ctx.Done():
			return Charge{}, nil, context.Cause(ctx)
		}
	}
}

// end marks key as answered, with c unless c has no ID (no answer).
func (p *provider) end(key string, c Charge) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.answering, key)
	if c.ID != "" {
		p.remember(key, c)
	}
}

// remember keeps c at hand as the answer under key; p.mu is held.
func (p *provider) remember(key string, c Charge) {
	if _, ok := p.recent[key]; !ok {
		delete(p.recent, p.ring[p.next])
		p.ring[p.next] = key
		p.next = (p.next + 1) % recentAnswers
	}
	p.recent[key] = c
}

// atHand returns the answer this process gave under key, or a pending
// charge while it works on it.
func (p *provider) atHand(key string) (Charge, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.recent[key]; ok {
		return c, true
	}
	if _, busy := p.answering[key]; busy {
		return Charge{PaymentKey: key, Status: StatusPending}, true
	}
	return Charge{}, false
}

// lookup returns what the provider answered under key; a pending charge
// while this process is still answering it; NotFound when the provider
// never had the key.
func (p *provider) lookup(ctx context.Context, key string) (Charge, error) {
	// At hand first: a call that answers between the two looks is then
	// found by the second.
	if c, ok := p.atHand(key); ok {
		return c, nil
	}
	return p.store.GetByKey(ctx, key)
}

// void makes sure nothing will ever be charged under key: the provider
// remembers a key it never had as failed, and returns the answer of one
// it had (pending, while this process is still answering it).
func (p *provider) void(ctx context.Context, key string) (Charge, error) {
	if c, ok := p.atHand(key); ok {
		return c, nil
	}
	stored, _, err := p.store.Record(ctx, Charge{PaymentKey: key, Status: StatusFailed, CreatedAt: p.now()})
	if err == nil {
		p.mu.Lock()
		p.remember(key, stored)
		p.mu.Unlock()
	}
	return stored, err
}
