package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/lab"
	"github.com/mercado-lab/mercado/loadtest"
)

// A lab's exit status is its verdict: 0 when every check passed on valid
// runs, 3 when a check failed, 4 when a run was INVALID — whatever its
// checks said. Each case drives a one-second scenario lab to its end
// (the load generator in its own process, as in `mercado lab`), its run
// held to a rule of the test's, the production rule left as it is: the
// valid cases to one any schedule lag meets (a busy machine must not
// turn them INVALID), the INVALID case to one no schedule lag meets.
func TestLabExitStatusIsItsVerdict(t *testing.T) {
	anyLag := loadtest.Validity{MinAchieved: loadtest.DefaultValidity().MinAchieved, MaxLagP99: time.Hour, MaxStall: time.Hour}
	noLag := loadtest.Validity{MinAchieved: loadtest.DefaultValidity().MinAchieved, MaxLagP99: -time.Hour, MaxStall: time.Hour}
	for _, tc := range []struct {
		name     string
		file     string
		validity *loadtest.Validity
		status   int
		table    []string // in the table, on stdout
		line     string   // in the one line on stderr
	}{
		{"every check passed", "testdata/verdict-pass.yaml", &anyLag, 0,
			[]string{"PASS  browsing answers", "Verdict: PASS"}, ""},
		{"a check failed", "testdata/verdict-fail.yaml", &anyLag, exitFailed,
			[]string{"FAIL  browsing answers in no time", "Verdict: FAIL: 1 of 1 checks failed"}, "FAIL, 1 of 1 checks failed: browsing answers in no time"},
		{"the run was INVALID, its check passed", "testdata/verdict-pass.yaml", &noLag, exitInvalid,
			[]string{"!!! budgeted run INVALID: schedule lag p99", "Close other programs", "PASS  browsing answers", "Verdict: INVALID"},
			"INVALID, its checks are not a measurement: budgeted run: schedule lag p99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// stderr takes the progress bar's lines and the generator
			// process's at once.
			var stdout bytes.Buffer
			var stderr syncBuffer
			err := scenarioLab(context.Background(), tc.file, []string{"--out", t.TempDir()}, env(nil), &stdout, &stderr, tc.validity)
			var exit strings.Builder
			if got := exitCode(err, &exit); got != tc.status {
				t.Fatalf("exit status %d (%v), want %d; stdout:\n%s\nstderr:\n%s", got, err, tc.status, stdout.String(), stderr.String())
			}
			for _, want := range tc.table {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("the table lacks %q:\n%s", want, stdout.String())
				}
			}
			if tc.line != "" && (!strings.Contains(exit.String(), tc.line) || strings.Count(exit.String(), "\n") != 1) {
				t.Errorf("stderr's last word is %q, want one line with %q", exit.String(), tc.line)
			}
		})
	}
}

// The replays make claims too: lesson 7's naive checkout ends OVER the
// deadline and its budgeted one WITHIN; a replay whose every try a stall
// decided is INVALID, whatever its verdicts.
func TestReplayExitStatusIsItsVerdict(t *testing.T) {
	lesson := func(naive, budgeted, disturbed string) lab.Lesson7Result {
		var r lab.Lesson7Result
		r.Naive.Verdict, r.Budgeted.Verdict = naive, budgeted
		r.Budgeted.Disturbed = disturbed
		return r
	}
	for _, tc := range []struct {
		name   string
		res    lab.Lesson7Result
		status int
	}{
		{"naive over, budgeted within", lesson("OVER", "WITHIN", ""), 0},
		{"budgeted over", lesson("OVER", "OVER", ""), exitFailed},
		{"naive within", lesson("WITHIN", "WITHIN", ""), exitFailed},
		{"every budgeted try decided by a stall", lesson("OVER", "OVER", "payments works 50 ms, yet timed out"), exitInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claims, invalid := lesson7Claims(tc.res)
			var out bytes.Buffer
			err := replayOutput(&out, false, nil, func(io.Writer) {}, "lab lesson7", claims, invalid)
			if got := exitCode(err, io.Discard); got != tc.status {
				t.Errorf("exit status %d (%v), want %d; printed:\n%s", got, err, tc.status, out.String())
			}
			verdict := map[int]string{0: "Verdict: PASS", exitFailed: "Verdict: FAIL", exitInvalid: "Verdict: INVALID: a stall of this process decided every try of budgeted run: payments works 50 ms"}[tc.status]
			if !strings.Contains(out.String(), "naive ends over the client's deadline") || !strings.Contains(out.String(), verdict) {
				t.Errorf("the checks and %q were not printed:\n%s", verdict, out.String())
			}
		})
	}
}
