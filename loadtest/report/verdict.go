package report

import (
	"fmt"

	"github.com/mercado-lab/mercado/loadtest"
)

// InvalidLine is an INVALID run as the table and the page say it: the
// mode, what made it invalid and what to do.
func InvalidLine(m loadtest.ModeResult) string {
	advice := m.Advice
	if advice == "" { // results written before runs carried their advice
		advice = loadtest.InvalidAdvice(invalidReason(m))
	}
	return oneLine(m.Mode) + " run INVALID: " + oneLine(advice)
}

// VerdictLine is the run's verdict in words, or "" when it has none
// (results written before runs were judged).
func VerdictLine(r loadtest.Results) string {
	failed := 0
	for _, c := range r.Checks {
		if !c.Pass {
			failed++
		}
	}
	switch r.Verdict {
	case loadtest.VerdictInvalid:
		return "INVALID: the load generator fell behind its schedule, so the checks are not a measurement (see the INVALID run above)"
	case loadtest.VerdictFail:
		return fmt.Sprintf("FAIL: %d of %d checks failed, on valid runs", failed, len(r.Checks))
	case loadtest.VerdictPass:
		if len(r.Checks) == 0 {
			return "PASS: the runs are valid; the scenario makes no checks"
		}
		return fmt.Sprintf("PASS: every check passed (%d), on valid runs", len(r.Checks))
	}
	return ""
}
