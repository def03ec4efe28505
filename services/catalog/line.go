package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// A reservation waits in line for its products' locks (on PostgreSQL, for
// a connection to ask with as well) for at most half the time its caller
// left it, and keeps the other half to commit and answer: a reservation
// that got the locks any later would commit for a caller already gone,
// while the line behind it waited. It then answers at once that the
// product is in demand, having reserved nothing. A reservation with no
// deadline — naive mode, whose servers work on after their callers left —
// waits as long as the line takes.

// linePatience is how long a reservation under ctx may wait in line, and
// false when it may wait as long as it takes.
func linePatience(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(d) / 2, true
}

// errGaveUp is the cause of every errInDemand.
var errGaveUp = errors.New("gave up waiting in line")

// errInDemand is the answer of a reservation that gave up in line for
// what (`"coffee-arabica"`, "a connection to the store"): a conflict the
// client may try again, and one nothing was done for.
func errInDemand(what string, patience time.Duration) error {
	return &apperr.Error{Code: apperr.Conflict, Reason: apperr.ReasonNotProcessed, Err: errGaveUp,
		Message: fmt.Sprintf("%s is in demand: not free within %v, half the time left; nothing was reserved, try again",
			what, patience.Round(time.Millisecond))}
}
