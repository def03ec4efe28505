package budgetcheck

import (
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
)

// The proxy in front of the edge: outer larger than inner, in each of
// connect, read and idle.
func TestProxies(t *testing.T) {
	good := Proxy{Where: "nginx.conf:1", Connect: 300 * time.Millisecond, Read: time.Hour, KeepAlive: true, KeepAliveTimeout: 60 * time.Second}
	for _, tc := range []struct {
		name  string
		edit  func(*Proxy, *Edge)
		rules []string
	}{
		{"the shipped values", func(*Proxy, *Edge) {}, nil},
		{"read below the batch maximum", func(p *Proxy, _ *Edge) { p.Read = 10 * time.Minute }, []string{RuleProxyRead}},
		{"read exactly the longest budget", func(p *Proxy, e *Edge) { p.Read = e.Budgets.For("batch").Max }, nil},
		{"idle as long as the edge's", func(p *Proxy, _ *Edge) { p.KeepAliveTimeout = 90 * time.Second }, []string{RuleProxyIdle}},
		{"no keepalive: no idle order", func(p *Proxy, _ *Edge) { p.KeepAlive, p.KeepAliveTimeout = false, time.Hour }, nil},
		{"the edge's idle timeout unknown", func(p *Proxy, e *Edge) { p.KeepAliveTimeout, e.IdleTimeout = time.Hour, 0 }, nil},
		{"connect as long as the budget", func(p *Proxy, e *Edge) { p.Connect = e.Budgets.For("interactive").Default }, []string{RuleProxyConnect}},
		{"all three", func(p *Proxy, _ *Edge) {
			*p = Proxy{Connect: time.Minute, Read: time.Minute, KeepAlive: true, KeepAliveTimeout: 2 * time.Minute}
		},
			[]string{RuleProxyRead, RuleProxyIdle, RuleProxyConnect}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := shopOf(mode.Budgeted, 0, 300*time.Millisecond, 1)
			s.Edge.IdleTimeout = 90 * time.Second
			p := good
			tc.edit(&p, &s.Edge)
			s.Proxies = []Proxy{p}
			got := rules(Check(s))
			if len(got) != len(tc.rules) {
				t.Fatalf("rules %v, want %v", got, tc.rules)
			}
			for i := range got {
				if got[i] != tc.rules[i] {
					t.Errorf("rules %v, want %v", got, tc.rules)
				}
			}
		})
	}
}
