package lab

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/loadtest"
	"github.com/mercado-lab/mercado/loadtest/report"
)

// CapstoneStage is one row of the capstone's table. The clients' figures
// are those of the requests sent while the fault was on; the servers'
// (pool peak, breaker opens, late work, duplicate charges) are counted
// over the stage's whole run.
type CapstoneStage struct {
	Stage string `json:"stage"`
	// Adds is what the stage switched on over the one before; Mode and
	// Mechanisms are how (the preset, and the switches on top of it in the
	// --mechanisms syntax).
	Adds       string `json:"adds"`
	Mode       string `json:"mode"`
	Mechanisms string `json:"mechanisms,omitempty"`
	// Valid is false when the load generator fell behind its schedule:
	// the figures then measure the generator as much as the shop.
	Valid   bool   `json:"valid"`
	Invalid string `json:"invalid,omitempty"`
	// Advice, on an invalid stage, says what to do about it.
	Advice string `json:"advice,omitempty"`

	BrowseRequests      int     `json:"browse_requests"`
	BrowseSuccessRatio  float64 `json:"browse_success_ratio"`
	BrowseGoodputPerS   float64 `json:"browse_goodput_per_s"`
	CheckoutRequests    int     `json:"checkout_requests"`
	CheckoutGoodputPerS float64 `json:"checkout_goodput_per_s"`
	CheckoutP99MS       float64 `json:"checkout_p99_ms"`
	CheckoutP999MS      float64 `json:"checkout_p999_ms"`
	CheckoutMaxMS       float64 `json:"checkout_max_ms"`
	// PoolPeak is the most requests the gateway's busiest inbound pool
	// held at once (PoolPeakName: which pool).
	PoolPeak         int     `json:"pool_peak"`
	PoolPeakName     string  `json:"pool_peak_name"`
	BreakerOpens     int     `json:"breaker_opens"`
	LateWorkSeconds  float64 `json:"late_work_seconds"`
	DuplicateCharges int     `json:"duplicate_charges"`
	// StoppedAtEnd: the stage had no read caps, so its shop was stopped
	// once the schedule and the clients' deadline were over; what it still
	// held then was cut off, and its late work is what finished before.
	StoppedAtEnd bool `json:"stopped_at_end"`
}

// CapstoneResult is the capstone's run.
type CapstoneResult struct {
	Config struct {
		CheckoutRate float64 `json:"checkout_rate"`
		BrowseRate   float64 `json:"browse_rate"`
		WarmUpS      float64 `json:"warm_up_s"`
		FaultS       float64 `json:"fault_s"`
		DeadlineMS   int64   `json:"deadline_ms"`
		PatienceMS   int64   `json:"patience_ms"`
		Carrier      string  `json:"carrier"`
		Stall        string  `json:"stall,omitempty"`
		StallForS    float64 `json:"stall_for_s,omitempty"`
		Margin       string  `json:"margin"`
		Workers      int     `json:"workers"`
	} `json:"config"`
	// Suggestion is what the suggest step chose from stage 0's healthy
	// warm-up, and why; stages 1 to 3 run with it.
	Suggestion budget.Suggestion `json:"suggestion"`
	Stages     []CapstoneStage   `json:"stages"`
	// Checks are the lesson's claims, measured on this run.
	Checks []report.Claim `json:"checks"`
	// Verdict weighs the checks and the stages' validity: INVALID when a
	// stage's run was (its checks are not a measurement), else FAIL when
	// a check failed, else PASS.
	Verdict loadtest.Verdict `json:"verdict"`
	// Run is every stage's full results, one mode per stage, for the
	// HTML report.
	Run loadtest.Results `json:"-"`
}

// capstoneView reads the table's figures from the stages' runs.
func capstoneView(cfg CapstoneConfig, sugg budget.Suggestion, run loadtest.Results) (CapstoneResult, error) {
	var res CapstoneResult
	c := &res.Config
	c.CheckoutRate, c.BrowseRate = cfg.CheckoutRate, cfg.BrowseRate
	c.WarmUpS, c.FaultS = cfg.WarmUp.Seconds(), cfg.Fault.Seconds()
	c.DeadlineMS, c.PatienceMS = cfg.Deadline.Milliseconds(), cfg.Patience.Milliseconds()
	c.Carrier, c.Margin, c.Workers = cfg.Carrier, cfg.Margin.String(), cfg.Workers
	if cfg.stalls() {
		c.Stall, c.StallForS = cfg.Stall, cfg.StallFor.Seconds()
	}
	res.Suggestion, res.Run = sugg, run
	for _, st := range capstoneStages() {
		i := slices.IndexFunc(run.Modes, func(m loadtest.ModeResult) bool { return m.Mode == st.name })
		if i < 0 {
			return CapstoneResult{}, fmt.Errorf("the run has no stage %s", st.name)
		}
		mr := run.Modes[i]
		if len(mr.FaultClasses) == 0 {
			return CapstoneResult{}, fmt.Errorf("stage %s sent nothing while the fault was on", st.name)
		}
		checkout, browse := summaryOf(mr.FaultClasses, "checkout"), summaryOf(mr.FaultClasses, "browse")
		mech, err := st.mechanisms()
		if err != nil {
			return CapstoneResult{}, err
		}
		row := CapstoneStage{
			Stage: st.name, Adds: st.adds, Mode: string(st.mode), Mechanisms: st.overrides, Valid: mr.Valid, Invalid: mr.Invalid,
			BrowseRequests: browse.Requests, BrowseSuccessRatio: browse.SuccessRatio, BrowseGoodputPerS: browse.Goodput,
			CheckoutRequests: checkout.Requests, CheckoutGoodputPerS: checkout.Goodput,
			CheckoutP99MS: checkout.P99MS, CheckoutP999MS: checkout.P999MS, CheckoutMaxMS: checkout.MaxMS,
			BreakerOpens: int(mr.Server.BreakerOpens), LateWorkSeconds: mr.Server.LateWorkSeconds,
			DuplicateCharges: int(mr.Server.DuplicateCharges), StoppedAtEnd: !mech.Caps,
		}
		peaks := map[string]int{}
		for pool, series := range mr.PoolInFlight {
			peaks[pool] = int(slices.Max(append(series, 0)))
		}
		row.PoolPeak, row.PoolPeakName = gatewayPeak(peaks)
		if !row.Valid {
			row.Advice = loadtest.InvalidAdvice(row.Invalid)
		}
		res.Stages = append(res.Stages, row)
	}
	res.Checks = capstoneChecks(cfg, res.Stages)
	res.Verdict = res.judge()
	return res, nil
}

// judge is the run's verdict (Verdict).
func (r CapstoneResult) judge() loadtest.Verdict {
	invalid := 0
	for _, s := range r.Stages {
		if !s.Valid {
			invalid++
		}
	}
	passes := make([]bool, len(r.Checks))
	for i, c := range r.Checks {
		passes[i] = c.Pass
	}
	return loadtest.Judge(invalid, passes)
}

// gatewayPeak is the gateway's busiest inbound pool (not a pool of calls
// to a dependency) and its peak.
func gatewayPeak(peaks map[string]int) (int, string) {
	best, name := 0, ""
	for pool, v := range peaks {
		inbound := !strings.Contains(pool, "/to.") && !strings.HasSuffix(pool, "/outbound")
		if strings.HasPrefix(pool, "gateway/") && inbound && (v > best || v == best && pool < name) {
			best, name = v, pool
		}
	}
	return best, strings.TrimPrefix(name, "gateway/")
}

// browseSlack is how far a stage's browse success may sit below the
// stage before's and still count as no worse: a few requests' noise.
const browseSlack = 0.005

// capstoneChecks are the lesson's claims about the table.
func capstoneChecks(cfg CapstoneConfig, st []CapstoneStage) []report.Claim {
	if len(st) == 0 {
		return nil
	}
	first, last := st[0], st[len(st)-1]
	pct := func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
	out := []report.Claim{
		{Name: "stage 0's browse success is below 50%", Pass: first.BrowseSuccessRatio < 0.5, Got: pct(first.BrowseSuccessRatio)},
		{Name: fmt.Sprintf("stage 0's checkout max is more than 5× stage %s's", last.Stage),
			Pass: first.CheckoutMaxMS > 5*last.CheckoutMaxMS, Got: fmt.Sprintf("%.0f ms against %.0f ms", first.CheckoutMaxMS, last.CheckoutMaxMS)},
	}
	worse := []string{}
	for i := 1; i < len(st); i++ {
		if st[i].BrowseSuccessRatio < st[i-1].BrowseSuccessRatio-browseSlack {
			worse = append(worse, fmt.Sprintf("%s %s after %s", st[i].Stage, pct(st[i].BrowseSuccessRatio), pct(st[i-1].BrowseSuccessRatio)))
		}
	}
	got := "each at least the one before"
	if len(worse) > 0 {
		got = strings.Join(worse, "; ")
	}
	out = append(out,
		report.Claim{Name: "no stage browses worse than the one before (within half a point)", Pass: len(worse) == 0, Got: got},
		report.Claim{Name: fmt.Sprintf("stage %s's browse success is at least 99%%", last.Stage), Pass: last.BrowseSuccessRatio >= 0.99, Got: pct(last.BrowseSuccessRatio)},
		report.Claim{Name: fmt.Sprintf("stage %s's checkout p99.9 is within the deadline + 10 ms (%d ms)", last.Stage, cfg.Deadline.Milliseconds()+10),
			Pass: last.CheckoutP999MS <= float64(cfg.Deadline.Milliseconds()+10), Got: fmt.Sprintf("%.0f ms", last.CheckoutP999MS)},
	)
	return out
}

// WriteJSON writes r as indented JSON.
func (r CapstoneResult) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// tableHead and tableRow are the before/after table, one row per stage.
var capstoneHead = []string{"stage", "browse ok", "browse/s", "checkout/s", "p99", "p99.9", "max", "pool peak", "breaker opens", "late work", "dup charges"}

func (s CapstoneStage) cells() []string {
	name := s.Stage
	if !s.Valid {
		name += " (INVALID)"
	}
	msf := func(x float64) string { return fmt.Sprintf("%.0f ms", x) }
	late := fmt.Sprintf("%.1f s", s.LateWorkSeconds)
	if s.StoppedAtEnd {
		late = "≥ " + late
	}
	return []string{name, fmt.Sprintf("%.1f%%", 100*s.BrowseSuccessRatio), fmt.Sprintf("%.1f", s.BrowseGoodputPerS),
		fmt.Sprintf("%.1f", s.CheckoutGoodputPerS), msf(s.CheckoutP99MS), msf(s.CheckoutP999MS), msf(s.CheckoutMaxMS),
		fmt.Sprintf("%d", s.PoolPeak), fmt.Sprintf("%d", s.BreakerOpens), late, fmt.Sprintf("%d", s.DuplicateCharges)}
}

// WriteTable writes the suggestion and the before/after table, then the
// lesson's checks.
func (r CapstoneResult) WriteTable(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "Lesson 8: the fragile checkout armoured step by step. In each stage, on a fresh shop: %.0f s healthy,\n", c.WarmUpS)
	fmt.Fprintf(w, "then %s,\nunder %.0f checkouts/s and %.0f browses/s; every client waits %d ms (and hangs up %d ms later).\n", r.faultText(), c.CheckoutRate, c.BrowseRate, c.DeadlineMS, c.PatienceMS)
	fmt.Fprintf(w, "Clients' figures while the fault is on; servers' over the stage.\n\n")
	for _, l := range r.invalidLines() {
		fmt.Fprintf(w, "!!! %s\n", l)
	}
	fmt.Fprintln(w, "The suggest step, from stage 0's healthy warm-up (stages 1 to 3 run with these):")
	for _, l := range suggestionLines(r.Suggestion) {
		fmt.Fprintln(w, "  "+l)
	}
	fmt.Fprintln(w)
	rows := [][]string{capstoneHead}
	for _, s := range r.Stages {
		rows = append(rows, s.cells())
	}
	writeColumns(w, rows)
	fmt.Fprintln(w)
	for _, s := range r.Stages {
		fmt.Fprintf(w, "  %-13s adds %s\n", s.Stage, s.Adds)
	}
	if slices.ContainsFunc(r.Stages, func(s CapstoneStage) bool { return s.StoppedAtEnd }) {
		fmt.Fprintln(w, "  ≥: a stage without read caps is stopped when its schedule ends; work it still held is cut off, not counted.")
	}
	fmt.Fprintln(w)
	if slices.ContainsFunc(r.Stages, func(s CapstoneStage) bool { return !s.Valid }) {
		fmt.Fprintln(w, "The lesson's claims (over INVALID stages they measure the load generator as much as the shop):")
	} else {
		fmt.Fprintln(w, "The lesson's claims:")
	}
	for _, ch := range r.Checks {
		fmt.Fprintln(w, ch)
	}
	fmt.Fprintf(w, "\nVerdict: %s\n", r.verdictLine())
}

// invalidLines say, for each INVALID stage, why and what to do.
func (r CapstoneResult) invalidLines() []string {
	var out []string
	for _, s := range r.Stages {
		if !s.Valid {
			out = append(out, fmt.Sprintf("stage %s INVALID: %s", s.Stage, s.Advice))
		}
	}
	return out
}

// verdictLine is the verdict in words.
func (r CapstoneResult) verdictLine() string {
	switch r.Verdict {
	case loadtest.VerdictInvalid:
		return "INVALID: the load generator fell behind its schedule in a stage, so the lesson's claims are not a measurement"
	case loadtest.VerdictFail:
		return "FAIL: a claim of the lesson did not hold, on valid stages"
	}
	return string(r.Verdict)
}

// faultText says what the fault is: the carrier slow, and the stall.
func (r CapstoneResult) faultText() string {
	c := r.Config
	t := fmt.Sprintf("%.0f s with shipping's carrier slow (%s)", c.FaultS, c.Carrier)
	if c.Stall != "" {
		t += fmt.Sprintf(", the first %s s of them with the %s connection stalled too (network stall: the data stops, the socket stays open)",
			strconv.FormatFloat(c.StallForS, 'f', -1, 64), c.Stall)
	}
	return t
}

// writeColumns writes rows as aligned columns: the first left-aligned,
// the rest right-aligned.
func writeColumns(w io.Writer, rows [][]string) {
	widths := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// WriteHTML writes the report: the table and the suggestion above every
// stage's figures and charts, each stage one column and one line.
func (r CapstoneResult) WriteHTML(w io.Writer) error {
	lead := report.Lead{
		Title: "Lesson 8: the fragile checkout, armoured step by step",
		Notes: []string{
			fmt.Sprintf("Each stage ran on a fresh shop: %.0f s healthy, then %s, under %.0f checkouts/s and %.0f browses/s; every client waits %d ms.",
				r.Config.WarmUpS, r.faultText(), r.Config.CheckoutRate, r.Config.BrowseRate, r.Config.DeadlineMS),
			"Clients' figures are those of the requests sent while the fault was on; the servers' are counted over the stage.",
		},
		Head: capstoneHead,
	}
	for _, s := range r.Stages {
		lead.Rows = append(lead.Rows, s.cells())
		lead.Notes = append(lead.Notes, "Stage "+s.Stage+" adds "+s.Adds+".")
	}
	lead.Lists = append(lead.Lists, report.List{Title: "The suggest step, from stage 0's healthy warm-up", Items: suggestionLines(r.Suggestion)})
	var checks []string
	for _, ch := range r.Checks {
		checks = append(checks, ch.String())
	}
	checks = append(checks, "Verdict: "+r.verdictLine())
	lead.Lists = append(lead.Lists, report.List{Title: "The lesson's claims, on this run", Items: checks})
	if invalid := r.invalidLines(); len(invalid) > 0 {
		lead.Lists = append(lead.Lists, report.List{Title: "INVALID stages", Items: invalid})
	}
	return report.WriteHTMLLead(w, r.Run, lead)
}
