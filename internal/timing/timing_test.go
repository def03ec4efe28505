package timing_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		hops []timing.Hop
		want string
	}{
		{"none", nil, ""},
		{
			"the documented example",
			[]timing.Hop{
				{Name: "catalog", Took: 280400 * time.Microsecond, Outcome: "ok", Timeout: 300 * time.Millisecond},
				{Name: "payments", Took: 760100 * time.Microsecond, Outcome: "ok", Timeout: 800 * time.Millisecond},
			},
			`catalog;dur=280.4;desc="ok";timeout=300, payments;dur=760.1;desc="ok";timeout=800`,
		},
		{"unbounded leaves out timeout", []timing.Hop{{Name: "orders", Took: time.Millisecond, Outcome: "ok"}}, `orders;dur=1.0;desc="ok"`},
		{"no outcome leaves out desc", []timing.Hop{{Name: "total", Took: 1250 * time.Microsecond}}, `total;dur=1.2`},
		{"skipped call", []timing.Hop{{Name: "shipping", Outcome: "skipped", Timeout: 160 * time.Millisecond}}, `shipping;dur=0.0;desc="skipped";timeout=160`},
		{"start offsets, the first at zero left out", []timing.Hop{
			{Name: "catalog", Took: 250 * time.Millisecond, Outcome: "ok", Timeout: 300 * time.Millisecond},
			{Name: "fraud", Took: 300 * time.Millisecond, Outcome: "ok", Timeout: 300 * time.Millisecond, Start: 400 * time.Microsecond},
			{Name: "payments", Took: 500 * time.Millisecond, Outcome: "ok", Timeout: 596 * time.Millisecond, Start: 300900 * time.Microsecond},
		}, `catalog;dur=250.0;desc="ok";timeout=300, fraud;dur=300.0;desc="ok";timeout=300;start=0.4, payments;dur=500.0;desc="ok";timeout=596;start=300.9`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := timing.Format(tt.hops); got != tt.want {
				t.Errorf("Format() = %q, want %q", got, tt.want)
			}
		})
	}
}

// Server-Timing carries durations to a tenth of a millisecond, so any
// duration at that resolution must come back exactly.
func TestFormatParseRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		hops []timing.Hop
	}{
		{"none", nil},
		{"one", []timing.Hop{{Name: "orders", Took: 1200 * time.Millisecond, Outcome: "ok"}}},
		{"lesson 7", []timing.Hop{
			{Name: "catalog", Took: 280 * time.Millisecond, Outcome: "ok", Timeout: 300 * time.Millisecond},
			{Name: "payments", Took: 760 * time.Millisecond, Outcome: "ok", Timeout: 800 * time.Millisecond},
			{Name: "shipping", Took: 160 * time.Millisecond, Outcome: "budget_exhausted", Timeout: 160 * time.Millisecond},
		}},
		{"fractions of a millisecond", []timing.Hop{
			{Name: "catalog", Took: 4100 * time.Microsecond, Outcome: "ok"},
			{Name: "payments", Took: 32300 * time.Microsecond, Outcome: "timeout", Timeout: 33 * time.Millisecond},
			{Name: "shipping", Took: 100 * time.Microsecond},
		}},
		{"skipped", []timing.Hop{{Name: "shipping", Outcome: "skipped"}}},
		{"exercise 2, in parallel", []timing.Hop{
			{Name: "catalog", Took: 250 * time.Millisecond, Outcome: "ok", Timeout: 300 * time.Millisecond, Start: 1200 * time.Microsecond, HasStart: true},
			{Name: "fraud", Took: 300 * time.Millisecond, Outcome: "ok", Timeout: 300 * time.Millisecond, Start: 1300 * time.Microsecond, HasStart: true},
			{Name: "payments", Took: 500 * time.Millisecond, Outcome: "ok", Timeout: 596 * time.Millisecond, Start: 301400 * time.Microsecond, HasStart: true},
		}},
		// A call made as the request arrived starts at 0.0 ms, and says so:
		// a start that rounds to zero is still known.
		{"a start of zero", []timing.Hop{
			{Name: "catalog", Took: 101 * time.Millisecond, Outcome: "ok", HasStart: true},
			{Name: "fraud", Took: 150 * time.Millisecond, Outcome: "ok", Start: 101500 * time.Microsecond, HasStart: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := timing.Format(tt.hops)
			got, err := timing.Parse(text)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", text, err)
			}
			if !slices.Equal(got, tt.hops) {
				t.Errorf("Parse(Format(hops)) = %+v, want %+v (text %q)", got, tt.hops, text)
			}
		})
	}
}

// Every tenth of a millisecond up to 5 s survives the trip.
func TestFormatParseRoundTripResolution(t *testing.T) {
	var bad []time.Duration
	for d := time.Duration(0); d <= 5*time.Second; d += 100 * time.Microsecond {
		hops, err := timing.Parse(timing.Format([]timing.Hop{{Name: "x", Took: d}}))
		if err != nil {
			t.Fatal(err)
		}
		if hops[0].Took != d {
			bad = append(bad, d)
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d durations changed on the trip, such as %v", len(bad), bad[:min(len(bad), 3)])
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []timing.Hop
	}{
		{"empty", "", nil},
		{"blank metrics skipped", " , ,", nil},
		{"metric without dur counts as zero", "cache", []timing.Hop{{Name: "cache"}}},
		{"unknown parameters ignored", `db;dur=2.5;foo=bar;baz;desc="ok"`, []timing.Hop{{Name: "db", Took: 2500 * time.Microsecond, Outcome: "ok"}}},
		{"bare desc token", "db;desc=ok", []timing.Hop{{Name: "db", Outcome: "ok"}}},
		{"spaces around parameters", ` db ; dur=1 ; timeout=5 `, []timing.Hop{{Name: "db", Took: time.Millisecond, Timeout: 5 * time.Millisecond}}},
		{"browser-style header", `cache;desc="Cache Read";dur=23.2, app;dur=47.2`, []timing.Hop{
			{Name: "cache", Outcome: "Cache Read", Took: 23200 * time.Microsecond},
			{Name: "app", Took: 47200 * time.Microsecond},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := timing.Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.in, err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"dur not a number", "catalog;dur=fast", `"catalog": dur`},
		{"empty dur", "catalog;dur=", `"catalog": dur`},
		{"timeout not whole", "payments;dur=1;timeout=1.5", `"payments": timeout`},
		{"timeout not a number", "payments;timeout=soon", `"payments": timeout`},
		{"bad metric after good ones", "a;dur=1, b;dur=x", `"b": dur`},
		{"start not a number", "fraud;dur=1;start=soon", `"fraud": start`},
		{"start negative", "fraud;dur=1;start=-3", `"fraud": start`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := timing.Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.in, got)
			}
			if got != nil {
				t.Errorf("Parse(%q) returned hops %+v with its error", tt.in, got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestRecorderZeroValue(t *testing.T) {
	var r timing.Recorder
	if got := r.Hops(); len(got) != 0 {
		t.Errorf("zero Recorder has hops %+v", got)
	}
	r.Add(timing.Hop{Name: "a"})
	r.Add(timing.Hop{Name: "b"})
	got := r.Hops()
	if want := []timing.Hop{{Name: "a"}, {Name: "b"}}; !slices.Equal(got, want) {
		t.Errorf("Hops() = %+v, want %+v", got, want)
	}
	// Hops returns a copy: changing it does not change the record.
	got[0].Name = "changed"
	if r.Hops()[0].Name != "a" {
		t.Error("changing the slice Hops returned changed the Recorder")
	}
}

// Run with -race: hops of parallel calls land in one record.
func TestRecorderConcurrent(t *testing.T) {
	var r timing.Recorder
	const writers, each = 8, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r.Add(timing.Hop{Name: "w", Took: time.Duration(w*each + i)})
				_ = r.Hops()
			}
		})
	}
	wg.Wait()
	hops := r.Hops()
	if len(hops) != writers*each {
		t.Fatalf("recorded %d hops, want %d", len(hops), writers*each)
	}
	seen := map[time.Duration]bool{}
	for _, h := range hops {
		seen[h.Took] = true
	}
	if len(seen) != writers*each {
		t.Errorf("recorded %d distinct hops, want %d: some were lost or duplicated", len(seen), writers*each)
	}
}

func TestWithRecorderFromContext(t *testing.T) {
	if r := timing.FromContext(context.Background()); r != nil {
		t.Errorf("FromContext(Background) = %v, want nil", r)
	}
	ctx, rec := timing.WithRecorder(context.Background())
	if rec == nil {
		t.Fatal("WithRecorder returned a nil Recorder")
	}
	if got := timing.FromContext(ctx); got != rec {
		t.Errorf("FromContext = %p, want the Recorder WithRecorder returned (%p)", got, rec)
	}
	// A derived context (as a call's timeout makes) sees the same record.
	child, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	timing.FromContext(child).Add(timing.Hop{Name: "catalog"})
	if got := rec.Hops(); len(got) != 1 || got[0].Name != "catalog" {
		t.Errorf("hop added through a derived context not recorded: %+v", got)
	}
	// A nested WithRecorder starts a new record and leaves the outer one alone.
	inner, innerRec := timing.WithRecorder(ctx)
	if innerRec == rec || timing.FromContext(inner) != innerRec {
		t.Error("nested WithRecorder did not install a new Recorder")
	}
}

// End dates a hop from the recorder's start: a call that took d and ends
// now began d ago. Two calls made at once start at the same offset
// whenever they end; Add keeps a start another server reported.
func TestRecorderEndStartOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, rec := timing.WithRecorder(context.Background())
		time.Sleep(10 * time.Millisecond)
		// catalog and fraud start together at 10 ms; fraud takes longer.
		time.Sleep(250 * time.Millisecond)
		rec.End(timing.Hop{Name: "catalog", Took: 250 * time.Millisecond})
		time.Sleep(50 * time.Millisecond)
		rec.End(timing.Hop{Name: "fraud", Took: 300 * time.Millisecond})
		rec.End(timing.Hop{Name: "payments", Outcome: "skipped"})
		rec.Add(timing.Hop{Name: "elsewhere", Start: 7 * time.Millisecond})
		want := []timing.Hop{
			{Name: "catalog", Took: 250 * time.Millisecond, Start: 10 * time.Millisecond, HasStart: true},
			{Name: "fraud", Took: 300 * time.Millisecond, Start: 10 * time.Millisecond, HasStart: true},
			{Name: "payments", Outcome: "skipped", Start: 310 * time.Millisecond, HasStart: true},
			{Name: "elsewhere", Start: 7 * time.Millisecond},
		}
		if got := rec.Hops(); !slices.Equal(got, want) {
			t.Errorf("Hops() = %+v,\nwant %+v", got, want)
		}
	})
	var zero timing.Recorder // knows no start
	zero.End(timing.Hop{Name: "catalog", Took: time.Millisecond})
	if got := zero.Hops(); got[0].Start != 0 || got[0].HasStart {
		t.Errorf("a zero Recorder dated a hop at %v (known: %t), want no start", got[0].Start, got[0].HasStart)
	}
}

// A hop's remaining budget is what was left of the client's deadline when
// the call began, so calls in series show it shrinking, calls made at
// once show the same, and a call after the deadline shows it negative.
func TestEndCallRecordsTheRemainingBudgetOnArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, rec := timing.WithRecorder(context.Background())
		ctx = deadline.WithClientDeadline(ctx, time.Now().Add(1200*time.Millisecond))
		time.Sleep(280 * time.Millisecond)
		timing.EndCall(ctx, timing.Hop{Name: "catalog", Took: 280 * time.Millisecond})
		time.Sleep(760 * time.Millisecond)
		timing.EndCall(ctx, timing.Hop{Name: "payments", Took: 760 * time.Millisecond})
		time.Sleep(300 * time.Millisecond)
		timing.EndCall(ctx, timing.Hop{Name: "shipping", Took: 300 * time.Millisecond})
		time.Sleep(10 * time.Millisecond)
		timing.EndCall(ctx, timing.Hop{Name: "late", Outcome: "skipped"})
		want := []timing.Hop{
			{Name: "catalog", Took: 280 * time.Millisecond, HasStart: true, Rem: 1200 * time.Millisecond, HasRem: true},
			{Name: "payments", Took: 760 * time.Millisecond, Start: 280 * time.Millisecond, HasStart: true, Rem: 920 * time.Millisecond, HasRem: true},
			{Name: "shipping", Took: 300 * time.Millisecond, Start: 1040 * time.Millisecond, HasStart: true, Rem: 160 * time.Millisecond, HasRem: true},
			{Name: "late", Outcome: "skipped", Start: 1350 * time.Millisecond, HasStart: true, Rem: -150 * time.Millisecond, HasRem: true},
		}
		if got := rec.Hops(); !slices.Equal(got, want) {
			t.Errorf("Hops() = %+v,\nwant %+v", got, want)
		}
		// Through Server-Timing and back, rem and all.
		text := timing.Format(want)
		if !strings.Contains(text, "catalog;dur=280.0;start=0.0;rem=1200.0") || !strings.Contains(text, "late;dur=0.0;desc=\"skipped\";start=1350.0;rem=-150.0") {
			t.Errorf("Format() = %q, want rem= on every hop", text)
		}
		back, err := timing.Parse(text)
		if err != nil || !slices.Equal(back, want) {
			t.Errorf("Parse(Format()) = %+v, %v; want %+v", back, err, want)
		}
	})
}

func TestEndCallWithoutAClientDeadlineLeavesRemOut(t *testing.T) {
	ctx, rec := timing.WithRecorder(context.Background())
	timing.EndCall(ctx, timing.Hop{Name: "catalog", Took: time.Millisecond})
	timing.EndCall(context.Background(), timing.Hop{Name: "nowhere"}) // no recorder: nothing to do
	hops := rec.Hops()
	if len(hops) != 1 || hops[0].HasRem {
		t.Fatalf("Hops() = %+v, want one hop with no remaining budget", hops)
	}
	if text := timing.Format(hops); strings.Contains(text, "rem=") {
		t.Errorf("Format() = %q, want no rem= without a client deadline", text)
	}
}

func TestParseRejectsABadRem(t *testing.T) {
	for _, v := range []string{"catalog;rem=abc", "catalog;rem=Inf", "catalog;rem=NaN"} {
		if _, err := timing.Parse(v); err == nil {
			t.Errorf("Parse(%q) = nil error, want one", v)
		}
	}
}
