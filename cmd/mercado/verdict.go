package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mercado-lab/mercado/loadtest"
	"github.com/mercado-lab/mercado/loadtest/report"
)

// A lab ends with its checks, and its exit status says what they found:
// 0 when every check passed on valid runs, exitFailed when a check
// failed, exitInvalid when a run was INVALID — the load generator fell
// behind its schedule (or, in a replay, a stall of the process decided
// every try), so its checks are not a measurement, whatever they say.
// INVALID wins over FAIL. 1 stays an error, 2 a usage error.
const (
	exitFailed  = 3
	exitInvalid = 4
)

// exitStatuses is how the help explains a lab's exit status.
const exitStatuses = `Exit status of a lab (and of mercado load):
  0  every check passed, on valid runs
  1  an error
  2  a usage error
  3  a check failed
  4  a run was INVALID: the load generator fell behind its schedule or
     was kept from running over 100 ms at once (in a replay, a stall of
     this process decided every try), so its checks are not a measurement;
     close other programs and run it again
`

// verdictError is a lab that ran to its end with a verdict other than
// PASS: what it printed holds the checks; the error is the one line that
// sums them up.
type verdictError struct {
	verdict loadtest.Verdict
	line    string
}

func (e verdictError) Error() string { return e.line }

// judged is a lab's verdict as an error: nil on PASS, else a verdictError
// naming the invalid runs (each "mode run: why") and what to do (todo),
// or the failed claims.
func judged(command string, invalid []string, todo string, claims []report.Claim) error {
	passes := make([]bool, len(claims))
	var failed []string
	for i, c := range claims {
		passes[i] = c.Pass
		if !c.Pass {
			failed = append(failed, c.Name)
		}
	}
	switch v := loadtest.Judge(len(invalid), passes); v {
	case loadtest.VerdictInvalid:
		return verdictError{v, fmt.Sprintf("%s: INVALID, its checks are not a measurement: %s. %s", command, strings.Join(invalid, "; "), todo)}
	case loadtest.VerdictFail:
		return verdictError{v, fmt.Sprintf("%s: FAIL, %d of %d checks failed: %s", command, len(failed), len(claims), strings.Join(failed, "; "))}
	}
	return nil
}

// scenarioVerdict is a scenario run's verdict as an error (judged).
func scenarioVerdict(command string, res loadtest.Results) error {
	var invalid []string
	for _, m := range res.Modes {
		if !m.Valid {
			invalid = append(invalid, m.Mode+" run: "+m.Invalid)
		}
	}
	return judged(command, invalid, loadtest.RunAgain, report.Claims(res.Checks))
}

// writeReplayVerdict prints a replay's verdict under its checks: err is
// its verdict as judged, invalid its runs a stall decided.
func writeReplayVerdict(w io.Writer, err error, invalid []string) {
	switch verdictExit(err) {
	case exitInvalid:
		fmt.Fprintf(w, "\nVerdict: INVALID: a stall of this process decided every try of %s, so the checks are not a measurement. %s.\n",
			strings.Join(invalid, "; "), replayTodo)
	case exitFailed:
		fmt.Fprintln(w, "\nVerdict: FAIL")
	default:
		fmt.Fprintln(w, "\nVerdict: PASS")
	}
}

// verdictExit is the exit status of a verdictError, or 0 when err is not
// one.
func verdictExit(err error) int {
	var v verdictError
	if !errors.As(err, &v) {
		return 0
	}
	if v.verdict == loadtest.VerdictInvalid {
		return exitInvalid
	}
	return exitFailed
}
