package lab

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/loadtest"
)

// judgeStep decides a step on its p99's 95% interval: sustained when the
// whole interval is within the bound, failed when the whole interval is
// past it, and held again while the interval straddles the bound; after
// the last hold the point p99 decides, and the step says so.
func TestJudgeStepDecidesOnTheInterval(t *testing.T) {
	cfg := CapacityConfig{P99: 50 * time.Millisecond, Step: time.Second, Deadline: time.Second}
	// 1,000 checkouts: 10 ms each but for the slowest ones, whose
	// latencies set the p99 (the 990th value) and its interval (the
	// 983rd to the 997th).
	step := func(slow []time.Duration) []loadtest.Sample {
		out := make([]loadtest.Sample, 1000)
		for i := range out {
			out[i] = loadtest.Sample{Code: http.StatusCreated, Latency: 10 * time.Millisecond}
		}
		for i, d := range slow {
			out[len(out)-1-i].Latency = d
		}
		return out
	}
	many := func(n int, d time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = d
		}
		return out
	}
	// The 997th value (the 4th slowest) is 40 ms: the whole interval holds.
	within := append(many(3, 900*time.Millisecond), many(20, 40*time.Millisecond)...)
	// The 983rd value (the 18th slowest) is 60 ms: the whole interval is past.
	past := many(20, 60*time.Millisecond)
	// The p99 (the 11th slowest) is 60 ms, the interval's low end (the 18th) 40 ms.
	straddlesOver := append(many(12, 60*time.Millisecond), many(10, 40*time.Millisecond)...)
	// The p99 is 40 ms, the interval's high end (the 4th slowest) 60 ms.
	straddlesUnder := append(many(5, 60*time.Millisecond), many(20, 40*time.Millisecond)...)

	for _, tc := range []struct {
		name          string
		slow          []time.Duration
		holds         int
		wantSustained bool
		wantStraddles bool
		wantWhy       string
	}{
		{"within", within, 1, true, false, ""},
		{"past", past, 1, false, false, "p99 60.0 ms (60.0–60.0) > 50 ms"},
		{"straddling, holds left", straddlesOver, 1, false, true, ""},
		{"straddling at the last hold, over", straddlesOver, maxHolds, false, false, "p99 60.0 ms > 50 ms after 3 holds (the interval holds it)"},
		{"straddling at the last hold, under", straddlesUnder, maxHolds, true, false, "by its p99 after 3 holds: the interval holds 50 ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 1,000 samples over the holds, one second each.
			st, straddles := judgeStep(step(tc.slow), 1000/float64(tc.holds), tc.holds, cfg)
			if straddles != tc.wantStraddles || (!straddles && (st.Sustained != tc.wantSustained || st.Why != tc.wantWhy)) {
				t.Errorf("step %+v, straddles %v; want sustained %v, straddles %v, why %q", st, straddles, tc.wantSustained, tc.wantStraddles, tc.wantWhy)
			}
			if st.P99LoMS > st.P99MS || st.P99MS > st.P99HiMS {
				t.Errorf("p99 %.1f ms outside its interval %.1f–%.1f", st.P99MS, st.P99LoMS, st.P99HiMS)
			}
		})
	}

	var b strings.Builder
	CapacityResult{Store: "memory", P99MS: 50, StepS: 1, Modes: []CapacityMode{{Mode: "budgeted",
		Steps: []CapacityStep{{Rate: 100, Holds: 2, Good: 200, P50MS: 9, P99MS: 48.2, P99LoMS: 41.5, P99HiMS: 49.9, Sustained: true}}}}}.WriteTable(&b)
	if !strings.Contains(b.String(), "p99 95% interval") || !strings.Contains(b.String(), "41.5–49.9") {
		t.Errorf("the table does not show the interval:\n%s", b.String())
	}
}
