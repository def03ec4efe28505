package loadtest

import "time"

// Validity is the rule that tells a run that measured the shop from one
// that measured its load generator: a generator that fell behind its
// schedule sent the requests late, or not at all, and the figures then
// say as much about the machine's other work as about the shop.
type Validity struct {
	// MinAchieved is the share of each phase's scheduled requests the
	// generator must have sent.
	MinAchieved float64 `json:"min_achieved"`
	// MaxLagP99 is the most the p99 of the schedule lag (each request's
	// send time less its intended one) may be.
	MaxLagP99 time.Duration `json:"max_lag_p99"`
	// MaxStall is the longest the generator's process may have been kept
	// from running at once (package stall). A stall delays every request
	// in flight by its length, and a tail figure — a p99.9 of a few
	// hundred requests is their slowest — then measures the stall.
	MaxStall time.Duration `json:"max_stall"`
}

// DefaultValidity is the rule every lab holds its runs to: 99% of the
// schedule sent, a schedule lag p99 of at most 10 ms, no stall longer
// than 100 ms (a tenth of the lessons' 1 s deadline).
func DefaultValidity() Validity {
	return Validity{MinAchieved: 0.99, MaxLagP99: 10 * time.Millisecond, MaxStall: 100 * time.Millisecond}
}

// Verdict is what a run says of its claims, its runs' validity weighed.
type Verdict string

const (
	// VerdictPass: every check passed, on valid runs.
	VerdictPass Verdict = "PASS"
	// VerdictFail: a check failed, on valid runs.
	VerdictFail Verdict = "FAIL"
	// VerdictInvalid: a run was INVALID, so its checks are not a
	// measurement, whether they passed or not.
	VerdictInvalid Verdict = "INVALID"
)

// Judge is the verdict of checks measured on runs of which invalid were
// INVALID: an INVALID run outweighs a failed check, since over it the
// check measured the generator as much as the shop.
func Judge(invalid int, checks []bool) Verdict {
	if invalid > 0 {
		return VerdictInvalid
	}
	for _, pass := range checks {
		if !pass {
			return VerdictFail
		}
	}
	return VerdictPass
}

// RunAgain is what to do about an INVALID run.
const RunAgain = "Close other programs and run it again, or lower the rates"

// InvalidAdvice is the line a lab shows of an INVALID run: what made it
// invalid (why, as ModeResult.Invalid says it) and what to do.
func InvalidAdvice(why string) string {
	return why + ": the load generator fell behind its schedule on a busy machine. " +
		RunAgain + " (or run a shorter scenario)"
}

// Conclude measures checks against r, notes under each INVALID run what
// to do about it, and gives r its verdict.
func (r *Results) Conclude(checks []Check) {
	r.Checks = Evaluate(checks, *r)
	invalid := 0
	for i := range r.Modes {
		if m := &r.Modes[i]; !m.Valid {
			invalid++
			m.Advice = InvalidAdvice(m.Invalid)
		}
	}
	passes := make([]bool, len(r.Checks))
	for i, c := range r.Checks {
		passes[i] = c.Pass
	}
	r.Verdict = Judge(invalid, passes)
}
