package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/lab/driver"
	"github.com/mercado-lab/mercado/loadtest"
	"github.com/mercado-lab/mercado/loadtest/report"
)

// RunState is a scenario run as the page shows it.
type RunState struct {
	// N numbers the console's runs, from 1.
	N     int    `json:"n"`
	Name  string `json:"name"`
	Quick bool   `json:"quick"`
	// State is "running", "done", "stopped" or "failed" (Error says why).
	State string `json:"state"`
	// Mode and Phase are where the run is; FaultOn tells whether the
	// phase has faults, and Faults which.
	Mode    mode.Mode `json:"mode"`
	Phase   string    `json:"phase"`
	FaultOn bool      `json:"fault_on"`
	Faults  string    `json:"faults,omitempty"`
	// DoneS and TotalS are the run's progress, every mode together.
	DoneS  float64 `json:"done_s"`
	TotalS float64 `json:"total_s"`
	// Checks are the scenario's checks, once done: PASS or FAIL each.
	Checks []string `json:"checks,omitempty"`
	// Verdict, once done, weighs the checks and the runs' validity:
	// PASS, FAIL, or INVALID when a mode's generator fell behind its
	// schedule. Invalid says, for each such mode, why and what to do.
	Verdict loadtest.Verdict `json:"verdict,omitempty"`
	Invalid []string         `json:"invalid,omitempty"`
	// Bands are the stretches of the run so far, each mode's phases in
	// order, on the clock of the live charts, which draw them.
	Bands []Band `json:"bands,omitempty"`
	// Report is the link to the run's report, once done.
	Report string `json:"report,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Band is one phase of one mode's run, from FromMS to ToMS (Unix ms, as
// its schedule has it: a running phase's end is still to come), with its
// faults on or not.
type Band struct {
	Mode    mode.Mode `json:"mode"`
	Phase   string    `json:"phase"`
	FaultOn bool      `json:"fault_on"`
	FromMS  int64     `json:"from_ms"`
	ToMS    int64     `json:"to_ms"`
}

// runs runs one scenario at a time against the shop, and keeps the last
// few reports.
type runs struct {
	ctx     context.Context
	shop    *driver.Driver
	network bool
	traffic *traffic

	mu      sync.Mutex
	n       int
	cur     *RunState
	stop    context.CancelFunc // nil unless running
	reports map[int][]byte
}

// keepReports is how many finished runs' reports the console holds.
const keepReports = 5

func newRuns(ctx context.Context, shop *driver.Driver, network bool, t *traffic) *runs {
	return &runs{ctx: ctx, shop: shop, network: network, traffic: t, reports: map[int][]byte{}}
}

func (r *runs) busy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stop != nil
}

func (r *runs) current() *RunState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		return nil
	}
	cp := *r.cur
	return &cp
}

// update changes the current run's state under the lock.
func (r *runs) update(f func(*RunState)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.cur)
}

// ScenarioRequest is the body of POST /console/api/scenario.
type ScenarioRequest struct {
	Name string `json:"name"`
	// Quick shortens each phase to its quick length, else to a fifth
	// (mercado lab --quick).
	Quick bool `json:"quick"`
}

// start runs sc in the background: the console's own traffic stops, as
// the scenario's is the shop's while it runs.
func (r *runs) start(sc loadtest.Scenario, quick bool) (RunState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil {
		return RunState{}, errors.New("a scenario is running already (DELETE /console/api/scenario stops it)")
	}
	r.traffic.follow(time.Duration(sc.Deadline))
	r.n++
	ctx, stop := context.WithCancel(r.ctx)
	r.stop = stop
	r.cur = &RunState{N: r.n, Name: sc.Name, Quick: quick, State: "running",
		TotalS: float64(len(sc.Modes)) * sc.Length().Seconds()}
	go r.run(ctx, r.n, sc)
	return *r.cur, nil
}

func (r *runs) run(ctx context.Context, n int, sc loadtest.Scenario) {
	progress := func(m string, done, _ time.Duration) {
		i := slices.Index(sc.Modes, mode.Mode(m))
		p := phaseAt(sc, done)
		now := time.Now()
		r.update(func(s *RunState) {
			s.Mode, s.Phase, s.FaultOn, s.Faults = mode.Mode(m), p.Name, len(p.Faults) > 0 || len(p.Network) > 0, describeFaults(p)
			s.DoneS = float64(max(i, 0))*sc.Length().Seconds() + done.Seconds()
			if !slices.ContainsFunc(s.Bands, func(b Band) bool { return b.Mode == s.Mode }) {
				s.Bands = append(s.Bands, bands(sc, s.Mode, now.Add(-done))...)
			}
		})
	}
	// The charts show the run's answers as they come, each under the
	// second it was meant to be sent in.
	onSample := func(_ string, s loadtest.Sample) {
		r.traffic.record(s.Intended.Truncate(time.Second).UnixMilli(), sc.DeadlineOf(s.Class), s)
	}
	res, err := loadtest.RunScenario(ctx, sc, r.shop, loadtest.RunOptions{Progress: progress, OnSample: onSample})
	var page bytes.Buffer
	if err == nil {
		err = report.WriteHTML(&page, res)
	}
	stopped := ctx.Err() != nil // by DELETE, or by the console stopping
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop()
	r.stop = nil
	switch {
	case stopped:
		r.cur.State = "stopped"
	case err != nil:
		r.cur.State, r.cur.Error = "failed", err.Error()
	default:
		r.cur.State, r.cur.DoneS = "done", r.cur.TotalS
		r.cur.Verdict = res.Verdict
		r.cur.Mode, r.cur.Phase, r.cur.FaultOn, r.cur.Faults = "", "", false, ""
		for _, c := range report.Claims(res.Checks) {
			r.cur.Checks = append(r.cur.Checks, c.String())
		}
		for _, m := range res.Modes {
			if !m.Valid {
				r.cur.Invalid = append(r.cur.Invalid, report.InvalidLine(m))
			}
		}
		r.reports[n] = page.Bytes()
		delete(r.reports, n-keepReports)
		r.cur.Report = fmt.Sprintf("/console/runs/%d/report.html", n)
	}
}

// phaseAt is the phase a mode's run is in after done.
func phaseAt(sc loadtest.Scenario, done time.Duration) loadtest.Phase {
	var end time.Duration
	for _, p := range sc.Phases {
		end += time.Duration(p.Duration)
		if done < end {
			return p
		}
	}
	return sc.Phases[len(sc.Phases)-1]
}

// bands are the phases of mode m's run of sc, which began at start, as
// its schedule runs them: each at its offset.
func bands(sc loadtest.Scenario, m mode.Mode, start time.Time) []Band {
	var out []Band
	at := start
	for _, p := range sc.Phases {
		end := at.Add(time.Duration(p.Duration))
		out = append(out, Band{Mode: m, Phase: p.Name, FaultOn: len(p.Faults) > 0 || len(p.Network) > 0, FromMS: at.UnixMilli(), ToMS: end.UnixMilli()})
		at = end
	}
	return out
}

// describeFaults is a phase's faults in words: "shipping CreateShipment:hang=15s".
func describeFaults(p loadtest.Phase) string {
	var parts []string
	for _, svc := range sortedKeys(p.Faults) {
		parts = append(parts, svc+" "+p.Faults[svc])
	}
	for _, link := range sortedKeys(p.Network) {
		parts = append(parts, link+" "+p.Network[link])
	}
	return strings.Join(parts, "; ")
}

func (r *runs) halt() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop == nil {
		return false
	}
	r.stop()
	return true
}

func (r *runs) report(n int) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.reports[n]
	return b, ok
}

func (c *Console) postScenario(w http.ResponseWriter, r *http.Request) {
	var req ScenarioRequest
	if !decode(w, r, &req) {
		return
	}
	// Only the built-in scenarios: a name is never read as a path on the
	// server's disk.
	if !slices.Contains(loadtest.Builtin(), req.Name) {
		problem.Write(w, r, http.StatusBadRequest, "name must be one of "+strings.Join(loadtest.Builtin(), ", "))
		return
	}
	sc, err := loadtest.LoadScenario(req.Name)
	if err != nil {
		problem.Write(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	if sc.UsesNetwork() && c.network == nil {
		problem.Write(w, r, http.StatusConflict, req.Name+" sets network faults, and "+errNoProxies.Error())
		return
	}
	if req.Quick {
		sc = sc.Quick()
	}
	st, err := c.runs.start(sc, req.Quick)
	if err != nil {
		problem.Write(w, r, http.StatusConflict, err.Error())
		return
	}
	c.o.Log.Info("scenario started from the console", "scenario", sc.Name, "quick", req.Quick)
	writeJSON(w, http.StatusAccepted, st)
}

func (c *Console) stopScenario(w http.ResponseWriter, r *http.Request) {
	if !c.runs.halt() {
		problem.Write(w, r, http.StatusConflict, "no scenario is running")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (c *Console) getReport(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("n"))
	b, ok := c.runs.report(n)
	if err != nil || !ok {
		problem.Write(w, r, http.StatusNotFound, "no such report: the console keeps the last 5 runs' reports")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}
