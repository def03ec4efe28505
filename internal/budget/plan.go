package budget

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Plan is an allocation: what each call is given, and whether the critical
// path fits at all. Its JSON is what `mercado budget plan --json` prints.
type Plan struct {
	Fits bool `json:"fits"`
	// AvailableMs is target − edge − own − reserve.
	AvailableMs int64 `json:"available_ms"`
	// CriticalPathP99Ms is the sum along seq, the max across par, of the
	// critical calls' p99s.
	CriticalPathP99Ms int64      `json:"critical_path_p99_ms"`
	Calls             []CallPlan `json:"calls"`
	// Advice: calls that would lengthen the critical path and, when the
	// plan does not fit, the redesigns that would, each with its worst case.
	Advice []string `json:"advice"`

	file  File
	worst time.Duration // the critical path with each call's margin
}

// CallPlan is one call's cap: its share of the available time.
type CallPlan struct {
	Name        string      `json:"name"`
	P99Ms       int64       `json:"p99_ms"`
	CapMs       int64       `json:"cap_ms"`
	HeadroomMs  int64       `json:"headroom_ms"`
	Criticality Criticality `json:"criticality"`
}

// edit is a redesign tried on the graph: a call taken off the critical
// path, or a run of a seq's items made parallel.
type edit struct {
	off      *Call
	seq      *Node // the seq whose items from..to run in parallel
	from, to int
}

// length is the node's critical path: the sum along seq, the max across
// par, of critical calls' p99s (plus margin for each when margin > 0).
func length(n *Node, margin time.Duration, e edit) time.Duration {
	switch {
	case n.Call != nil:
		if n.Call.Criticality != Critical || n.Call == e.off {
			return 0
		}
		return n.Call.P99 + margin
	case n.Par != nil:
		var m time.Duration
		for i := range n.Par {
			m = max(m, length(&n.Par[i], margin, e))
		}
		return m
	default:
		var sum, group time.Duration
		for i := range n.Seq {
			l := length(&n.Seq[i], margin, e)
			if e.seq == n && i >= e.from && i <= e.to {
				group = max(group, l)
				if i == e.to {
					sum += group
				}
				continue
			}
			sum += l
		}
		return sum
	}
}

// Make divides f's available time along its graph. f must be valid
// (Parse, or Validate once p99s are filled in).
func Make(f File) Plan {
	avail := f.Available()
	p := Plan{
		file:              f,
		AvailableMs:       avail.Milliseconds(),
		CriticalPathP99Ms: length(&f.Graph, 0, edit{}).Milliseconds(),
		worst:             length(&f.Graph, f.Margin, edit{}),
		Calls:             []CallPlan{},
		Advice:            []string{},
	}
	p.Fits = p.worst <= avail
	caps := map[*Call]time.Duration{}
	allocate(&f.Graph, avail, f.Margin, caps)
	for _, c := range f.Graph.Calls() {
		s := caps[c]
		p.Calls = append(p.Calls, CallPlan{
			Name: c.Name, P99Ms: c.P99.Milliseconds(), CapMs: s.Milliseconds(),
			HeadroomMs: s.Milliseconds() - c.P99.Milliseconds(), Criticality: c.Criticality,
		})
	}
	if !p.Fits {
		p.Advice = append(p.Advice, redesigns(f, p.worst)...)
	}
	p.Advice = append(p.Advice, optionalAdvice(&f.Graph, caps, avail)...)
	return p
}

// allocate gives n the time s: a call on the critical path takes it whole
// as its cap, a seq divides it among its items in proportion to their p99,
// and every branch of a par gets the whole of the par's. Optional calls
// get their own p99 plus margin as their cap; deferred and fire-forward
// calls, off the request path, likewise from the worker that makes them.
func allocate(n *Node, s, margin time.Duration, out map[*Call]time.Duration) {
	switch {
	case n.Call != nil:
		if n.Call.Criticality == Critical {
			out[n.Call] = s
		} else {
			out[n.Call] = n.Call.P99 + margin
		}
	case n.Par != nil:
		for i := range n.Par {
			allocate(&n.Par[i], s, margin, out)
		}
	default:
		total := length(n, 0, edit{})
		for i := range n.Seq {
			var share time.Duration
			if total > 0 {
				share = time.Duration(float64(s) * float64(length(&n.Seq[i], 0, edit{})) / float64(total))
			}
			allocate(&n.Seq[i], share, margin, out)
		}
	}
}

// wall is how long n takes when every call uses its cap: critical and
// optional calls on the request path, deferred and fire-forward ones not.
// Without counts the call as absent.
func wall(n *Node, caps map[*Call]time.Duration, without *Call) time.Duration {
	switch {
	case n.Call != nil:
		if n.Call == without || n.Call.Criticality == Deferred || n.Call.Criticality == FireForward {
			return 0
		}
		return caps[n.Call]
	case n.Par != nil:
		var m time.Duration
		for i := range n.Par {
			m = max(m, wall(&n.Par[i], caps, without))
		}
		return m
	default:
		var sum time.Duration
		for i := range n.Seq {
			sum += wall(&n.Seq[i], caps, without)
		}
		return sum
	}
}

// optionalAdvice flags the optional calls that would lengthen the critical
// path: in series with it, or longer than the par they run beside.
func optionalAdvice(g *Node, caps map[*Call]time.Duration, avail time.Duration) []string {
	var out []string
	full := wall(g, caps, nil)
	for _, c := range g.Calls() {
		if c.Criticality != Optional {
			continue
		}
		if by := full - wall(g, caps, c); by > 0 {
			out = append(out, fmt.Sprintf("optional %s (%s) would lengthen the critical path by %s, past the available %s: "+
				"run it beside the critical calls (in a par) and never wait for it, or it gets only what they leave",
				c.Name, ms(caps[c]), ms(by), ms(avail)))
		}
	}
	return out
}

// redesigns lists, for a plan that does not fit, the changes of the graph
// that would, each with its new worst case, and the target that would fit
// as it is.
func redesigns(f File, worst time.Duration) []string {
	avail := f.Available()
	out := []string{fmt.Sprintf("no configuration fixes this: the critical path's worst case, %s, is more than the available %s", ms(worst), ms(avail))}
	try := func(e edit) (time.Duration, bool) {
		w := length(&f.Graph, f.Margin, e)
		return w, w <= avail
	}
	var seqs func(n *Node)
	seqs = func(n *Node) {
		for i := range n.Par {
			seqs(&n.Par[i])
		}
		for i := range n.Seq {
			seqs(&n.Seq[i])
		}
		if len(n.Seq) < 2 {
			return
		}
		// Consecutive items on the critical path, run in parallel: each
		// pair, then the whole seq.
		var on []int
		for i := range n.Seq {
			if length(&n.Seq[i], 0, edit{}) > 0 {
				on = append(on, i)
			}
		}
		for k := 0; k+1 < len(on); k++ {
			if on[k+1] != on[k]+1 {
				continue
			}
			if w, ok := try(edit{seq: n, from: on[k], to: on[k+1]}); ok {
				out = append(out, fmt.Sprintf("parallelise %s and %s (consecutive in a seq; if they are independent): worst case %s",
					names(&n.Seq[on[k]]), names(&n.Seq[on[k+1]]), ms(w)))
			}
		}
		if len(on) > 2 {
			if w, ok := try(edit{seq: n, from: on[0], to: on[len(on)-1]}); ok {
				var all []string
				for _, i := range on {
					all = append(all, names(&n.Seq[i]))
				}
				out = append(out, fmt.Sprintf("parallelise all of %s (if they are independent): worst case %s", strings.Join(all, ", "), ms(w)))
			}
		}
	}
	seqs(&f.Graph)
	for _, c := range f.Graph.Calls() {
		if c.Criticality != Critical {
			continue
		}
		if w, ok := try(edit{off: c}); ok {
			out = append(out, fmt.Sprintf("take %s off the critical path (defer it, make it optional with a default, or drop it): worst case %s", c.Name, ms(w)))
		}
	}
	out = append(out, fmt.Sprintf("renegotiate the target to at least %s (worst case %s + edge %s + own %s + reserve %s)",
		ms(worst+f.Edge+f.Own+f.Reserve), ms(worst), ms(f.Edge), ms(f.Own), ms(f.Reserve)))
	return out
}

// names names a node by its critical calls ("catalog+fraud" for a par).
func names(n *Node) string {
	var s []string
	for _, c := range n.Calls() {
		if c.Criticality == Critical {
			s = append(s, c.Name)
		}
	}
	if len(s) == 1 {
		return s[0]
	}
	return "(" + strings.Join(s, "+") + ")"
}

// WriteTable prints the plan as the lessons' tables do: the subtraction,
// then one row per call, then the advice.
func (p Plan) WriteTable(w io.Writer) error {
	f := p.file
	verdict := "fits"
	if !p.Fits {
		verdict = "does not fit"
	}
	worst := ""
	if f.Margin > 0 {
		worst = fmt.Sprintf(" (%s with a %s margin per hop)", ms(p.worst), ms(f.Margin))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "target %s − edge %s − own %s − reserve %s = %s available\n",
		ms(f.Target), ms(f.Edge), ms(f.Own), ms(f.Reserve), ms(f.Available()))
	fmt.Fprintf(&b, "critical path p99 %d ms%s: %s\n\n", p.CriticalPathP99Ms, worst, verdict)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "call\tcriticality\tp99 ms\tcap ms\theadroom ms")
	for _, c := range p.Calls {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", c.Name, c.Criticality, c.P99Ms, c.CapMs, c.HeadroomMs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, a := range p.Advice {
		if i == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "- %s\n", a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
