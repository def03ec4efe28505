// Package deadline is Mercado's timeout-budget library: one deadline is set
// at the edge of the system and every hop spends what is left of it.
//
// The rules it implements come from Mercado's lessons:
//
//   - Choose the total first. [Edge] stamps now + min(client X-Deadline-Ms,
//     max budget) on each HTTP request, or a default budget when the client
//     sent none. Garbage in the header is a 400, a forged huge value is capped.
//   - Propagate relative time only. Inside a process the budget rides in the
//     context and the remaining time comes from the monotonic clock. Between
//     processes it travels as a duration: gRPC's native grpc-timeout, and
//     the X-Deadline-Ms header on HTTP. Never a wall-clock timestamp.
//   - Each call gets min(cap, remaining − margin) ([Policy.Decide]).
//   - Don't head to the airport after the flight has left: when
//     remaining − margin is below the floor, the call is not made and
//     [ErrInsufficientBudget] is returned.
//   - Enforce on the server too: [UnaryServerInterceptor] rejects requests
//     whose deadline is spent or below the floor on arrival.
//   - Classes of traffic, not one global number. A request's [Class]
//     (interactive, background, batch; header [HeaderClass]) picks its
//     default and maximum budget at the edge ([Budgets]) and travels in
//     gRPC metadata beside the deadline; [Class.Share] is how much of any
//     pool it may hold, so a full pool sheds batch first.
//   - Every server caps what it accepts: [ServerOptions.MaxDeadline] cuts
//     a deadline longer than the class's maximum, or none, down to it.
//   - Tell the two timeouts apart: a call that hit its own cap fails with
//     cause [ErrCallTimeout] (the dependency was slow), one cut short by the
//     caller's budget with [ErrBudgetExhausted] (the caller ran out of time).
//     Circuit breakers and metrics need the difference.
//
// A passive second clock travels beside the budget: the client's own
// deadline ([WithClientDeadline], header [HeaderClientDeadline]). It changes
// no behaviour; it lets every hop measure work finished after the client had
// already given up ("work for the trash"), even when budgets are off.
//
// The library never logs. Callers observe it through [Hooks].
package deadline
