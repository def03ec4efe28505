package deadline

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Class is a traffic class: how patient the work's client is, and so how
// big a budget it gets and how early it is shed when a pool is full. The
// class travels with the request, beside its deadline: the
// X-Request-Class header at the edge ([HeaderClass]) and gRPC metadata
// between services.
type Class string

// The classes, from the most patient client to the least.
const (
	// Interactive is a person waiting on a screen: the default.
	Interactive Class = "interactive"
	// Background is work a client started and will look at later: a
	// report, a sync, a refresh of a cache.
	Background Class = "background"
	// Batch is bulk work nobody waits on: exports, backfills, re-syncs.
	Batch Class = "batch"
)

// HeaderClass carries a request's class at the edge. Absent means
// Interactive.
const HeaderClass = "X-Request-Class"

// metadataClass is HeaderClass as gRPC metadata.
const metadataClass = "x-request-class"

// ErrBadClass is wrapped by every error of [ParseClass].
var ErrBadClass = errors.New("deadline: bad request class")

// ClassError is the error of a class header that names no class; it
// matches [ErrBadClass].
type ClassError struct {
	// Value is what the header said.
	Value string
}

func (e *ClassError) Error() string {
	v := e.Value
	if len(v) > 32 {
		v = v[:32] + "..."
	}
	return fmt.Sprintf("%v: %q is not %s, %s or %s", ErrBadClass, v, Interactive, Background, Batch)
}

// Unwrap makes a class error match ErrBadClass.
func (e *ClassError) Unwrap() error { return ErrBadClass }

// ParseClass reads a class header's value: "" is Interactive; anything
// but the three names (exactly, in lower case) is a *ClassError.
func ParseClass(s string) (Class, error) {
	switch c := Class(s); c {
	case "":
		return Interactive, nil
	case Interactive, Background, Batch:
		return c, nil
	}
	return "", &ClassError{Value: s}
}

// Share is the fraction of any pool's slots that work of class c may
// hold, so that a full pool refuses batch first, then background, and
// interactive work always finds a reserved part free: batch at most half,
// background three quarters, interactive all of it. The quarter only
// interactive work may use is what keeps a shop's shoppers served while
// a report runs; the half batch may not touch keeps them served while an
// export runs flat out beside it.
func (c Class) Share() float64 {
	switch c {
	case Batch:
		return 0.5
	case Background:
		return 0.75
	}
	return 1
}

// Limit is how many of capacity slots work of class c may hold: its
// Share, rounded up, so that every class gets at least one slot.
func (c Class) Limit(capacity int) int {
	if capacity <= 0 {
		return 0
	}
	n := int(c.Share()*float64(capacity) + 0.999999)
	return min(max(n, 1), capacity)
}

// ClassBudget is the budget of one class: the default for a request that
// asked for none, and the most a request of the class may ask for (and a
// server accepts).
type ClassBudget struct {
	Default, Max time.Duration
}

// Budgets are the classes' budgets. The zero value is DefaultBudgets.
type Budgets struct {
	Interactive, Background, Batch ClassBudget
}

// Default budgets, after the allocation rule "classes of traffic, not one
// global number":
//
//   - interactive: lesson 7's mobile client gives a checkout 1200 ms; the
//     most a client may ask for is 10 s (Drill 76's 8 s edge budget fits);
//   - background: 30 s, the time a user who asked for a report is still
//     on the page to see it come; at most 2 minutes;
//   - batch: 5 minutes, the time to walk a large catalogue page by page
//     when it is refused whenever shoppers need the capacity; at most 30
//     minutes, so that a forged header cannot pin a server for a day.
const (
	DefaultBackgroundBudget    = 30 * time.Second
	DefaultBackgroundMaxBudget = 2 * time.Minute
	DefaultBatchBudget         = 5 * time.Minute
	DefaultBatchMaxBudget      = 30 * time.Minute
)

// DefaultBudgets returns the default budget of every class.
func DefaultBudgets() Budgets {
	return Budgets{
		Interactive: ClassBudget{Default: DefaultBudget, Max: DefaultMaxBudget},
		Background:  ClassBudget{Default: DefaultBackgroundBudget, Max: DefaultBackgroundMaxBudget},
		Batch:       ClassBudget{Default: DefaultBatchBudget, Max: DefaultBatchMaxBudget},
	}
}

// For returns c's budget, each unset figure taken from DefaultBudgets.
func (b Budgets) For(c Class) ClassBudget {
	d := DefaultBudgets()
	got, def := b.Interactive, d.Interactive
	switch c {
	case Background:
		got, def = b.Background, d.Background
	case Batch:
		got, def = b.Batch, d.Batch
	}
	if got.Default <= 0 {
		got.Default = def.Default
	}
	if got.Max <= 0 {
		got.Max = def.Max
	}
	return got
}

type classKey struct{}

// WithClass returns ctx carrying c as its request's class: a copy, or
// ctx itself when its class is c already. Most requests are Interactive,
// which a context without a class is, so most need no copy.
func WithClass(ctx context.Context, c Class) context.Context {
	if ClassOf(ctx) == c {
		return ctx
	}
	return context.WithValue(ctx, classKey{}, c)
}

// ClassOf returns the class of ctx's request: Interactive when none was
// set.
func ClassOf(ctx context.Context) Class {
	if c, ok := ctx.Value(classKey{}).(Class); ok {
		return c
	}
	return Interactive
}
