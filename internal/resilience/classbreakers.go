package resilience

import (
	"github.com/mercado-lab/mercado/pkg/deadline"
	"github.com/mercado-lab/mercado/pkg/resilience/breaker"
)

// classBreakers are one dependency's circuit breakers, one per traffic
// class: each class's calls are judged by a breaker of their own.
//
// One breaker for every class lets the least patient work pay for the most
// patient. An export's page is a long call near the dependency's cap, and
// waits behind interactive work in every pool on its way: on a busy
// machine it is the call that times out. Counted in a shared window, a
// burst of those timeouts opens the breaker that browsing passes, and
// shoppers are refused for the whole OpenFor while the dependency answers
// them in milliseconds (docs/classes.md, "One breaker per class"). With a
// breaker per class, the batch timeouts open batch's breaker: the export
// backs off from a dependency too slow for it, and interactive calls are
// judged on their own results, so a dependency that fails them is still
// cut off.
//
// With the classes mechanism off every call is interactive, and one
// breaker judges them all, as before classes.
type classBreakers struct {
	interactive, background, batch *breaker.Breaker
}

func newClassBreakers(s breaker.Settings) classBreakers {
	return classBreakers{
		interactive: breaker.New(s),
		background:  breaker.New(s),
		batch:       breaker.New(s),
	}
}

// of returns the breaker of class c.
func (b classBreakers) of(c deadline.Class) *breaker.Breaker {
	switch c {
	case deadline.Background:
		return b.background
	case deadline.Batch:
		return b.batch
	}
	return b.interactive
}

// reset closes every class's breaker, as a mode switch does.
func (b classBreakers) reset() {
	b.interactive.Reset()
	b.background.Reset()
	b.batch.Reset()
}
