package report

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/loadtest"
)

// setting is one line of the run's settings: a name and what it was.
type setting struct{ Name, Value string }

// settingsOf states what the run was asked to do and where it ran: the
// deadline, the rates per class, each phase's faults and rates, the
// shop's size and the machine.
func settingsOf(s loadtest.RunSettings, modes []loadtest.ModeResult) []setting {
	var out []setting
	if s.DeadlineMS > 0 {
		v := num(s.DeadlineMS, 0) + " ms for every client"
		if s.PatienceMS > 0 {
			v += fmt.Sprintf(" (a late answer is still waited for up to %s ms more, to measure it)", num(s.PatienceMS, 0))
		}
		out = append(out, setting{"deadline", v})
	}
	if len(s.Classes) > 0 {
		var rates []string
		for _, c := range s.Classes {
			r := c.Class + " " + num(c.Rate, 0) + "/s"
			if c.DeadlineMS > 0 && c.DeadlineMS != s.DeadlineMS {
				r += " (deadline " + num(c.DeadlineMS, 0) + " ms)"
			}
			rates = append(rates, r)
		}
		traffic := strings.Join(rates, ", ")
		if s.Scale != 0 {
			traffic += fmt.Sprintf(" (the scenario's rates × %s, --scale)", num(s.Scale, 2))
		}
		out = append(out, setting{"traffic (open loop)", traffic})
	}
	if s.Checkouts != "" {
		out = append(out, setting{"checkouts buy", s.Checkouts + " (popularity over the catalogue's products; docs/loadtest.md)"})
	}
	if len(modes) > 0 {
		for _, p := range modes[0].Phases {
			out = append(out, setting{"phase " + p.Name, phaseText(p)})
		}
	}
	var shop []string
	if s.Workers > 0 {
		shop = append(shop, fmt.Sprintf("%s workers a service", num(float64(s.Workers), 0)))
	}
	if s.BreakerOpenMS > 0 {
		shop = append(shop, "breakers stay open "+time.Duration(s.BreakerOpenMS*float64(time.Millisecond)).String())
	}
	if s.Mechanisms != "" {
		shop = append(shop, "switches over every mode: "+s.Mechanisms)
	}
	if len(shop) > 0 {
		out = append(out, setting{"shop", strings.Join(shop, "; ")})
	}
	if s.CPUs > 0 {
		out = append(out, setting{"machine", fmt.Sprintf("%d CPU cores, GOMAXPROCS %d, %s (as the load generator saw them; a lab's shop runs on the same machine)",
			s.CPUs, s.GOMAXPROCS, s.GoVersion)})
	}
	return out
}

// phaseText is when a phase ran and what it broke.
func phaseText(p loadtest.PhaseSpan) string {
	var parts []string
	for _, svc := range sortedKeys(p.Faults) {
		parts = append(parts, svc+" "+p.Faults[svc])
	}
	for _, link := range sortedKeys(p.Network) {
		parts = append(parts, "network "+link+" "+p.Network[link])
	}
	for _, class := range sortedKeys(p.Rates) {
		parts = append(parts, class+" at "+num(p.Rates[class], 0)+"/s")
	}
	if a := p.Arrivals.String(); a != loadtest.ArrivalsConstant {
		parts = append(parts, a+" arrivals")
	}
	what := "no faults"
	if len(parts) > 0 {
		what = strings.Join(parts, "; ")
	}
	return fmt.Sprintf("%s–%s s: %s", num(p.StartS, 1), num(p.EndS, 1), what)
}

// mechanismTable is each mode's switches: a row per mechanism, a column
// per mode.
type mechanismTable struct {
	Modes []string
	Rows  []mechanismRow
}

type mechanismRow struct {
	Name   string
	Values []string
}

// mechanismsOf lists the mechanisms of the modes that recorded theirs, in
// the order mode.Mechanisms declares them.
func mechanismsOf(modes []loadtest.ModeResult) mechanismTable {
	var t mechanismTable
	var values []reflect.Value
	for _, m := range modes {
		if m.Mechanisms != nil {
			t.Modes = append(t.Modes, m.Mode)
			values = append(values, reflect.ValueOf(*m.Mechanisms))
		}
	}
	if len(values) == 0 {
		return t
	}
	typ := values[0].Type()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		row := mechanismRow{Name: strings.ReplaceAll(name, "_", " ")}
		for _, v := range values {
			f := v.Field(i)
			cell := fmt.Sprint(f.Interface())
			if f.Kind() == reflect.Bool {
				cell = map[bool]string{true: "on", false: "off"}[f.Bool()]
			}
			row.Values = append(row.Values, cell)
		}
		t.Rows = append(t.Rows, row)
	}
	// The mechanisms every mode had alike last, so the differences lead.
	slices.SortStableFunc(t.Rows, func(a, b mechanismRow) int {
		return boolRank(allSame(a.Values)) - boolRank(allSame(b.Values))
	})
	return t
}

func allSame(v []string) bool {
	return !slices.ContainsFunc(v, func(s string) bool { return s != v[0] })
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
