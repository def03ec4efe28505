package budgetcheck

import (
	"fmt"
	"time"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Proxy is a reverse proxy in front of the edge (nginx in
// docker-compose.yml), as its configuration sets it for the requests it
// passes to the edge. The rule for its timeouts is the lessons' "outer
// larger than inner", in three kinds: connect short, read per the
// budget, idle for pooling.
type Proxy struct {
	// Where names the configuration and the part that proxies
	// ("deploy/nginx/nginx.conf:40 location /").
	Where string
	// Connect bounds establishing a connection to the edge
	// (proxy_connect_timeout).
	Connect time.Duration
	// Read bounds the wait between two reads of the edge's answer
	// (proxy_read_timeout): the edge writes its answer once its work is
	// done, so this is the longest a request may take.
	Read time.Duration
	// KeepAlive says whether idle connections to the edge are kept for
	// reuse (upstream keepalive, over HTTP/1.1), and KeepAliveTimeout how
	// long the proxy keeps one idle (the upstream's keepalive_timeout).
	KeepAlive        bool
	KeepAliveTimeout time.Duration
}

// The proxy's rules.
const (
	RuleProxyRead    = "proxy_read_below_budget"
	RuleProxyIdle    = "proxy_idle_not_below_edge"
	RuleProxyConnect = "proxy_connect_above_budget"
)

// proxies: the proxy in front of the edge must let the edge finish what
// its budget allows, must give an idle connection up before the edge
// does, and must connect in much less than a request's budget.
func (s Deployment) proxies() []Finding {
	var out []Finding
	e := s.Edge
	for _, p := range s.Proxies {
		var longest time.Duration
		var class deadline.Class
		for _, c := range s.Classes() {
			if m := e.Budgets.For(c).Max; m > longest {
				longest, class = m, c
			}
		}
		if p.Read < longest {
			fix := fmt.Sprintf("set proxy_read_timeout above the longest budget %s grants (%s)", e.Service, ms(longest))
			if e.WriteTimeout > longest {
				fix += fmt.Sprintf(", such as its HTTP write timeout (%s)", ms(e.WriteTimeout))
			}
			out = append(out, Finding{Rule: RuleProxyRead, Where: p.Where,
				Setting: fmt.Sprintf("proxy_read_timeout %s, against %s %s=%s", ms(p.Read), e.Service, maxBudgetFlag(class), ms(longest)),
				Problem: fmt.Sprintf("the proxy gives up on an answer after %s (a 504 from the proxy), while %s may still be within a %s request's budget of %s: the outer layer gives up before the inner one can answer",
					ms(p.Read), e.Service, class, ms(longest)),
				Fix: fix})
		}
		if p.KeepAlive && e.IdleTimeout > 0 && p.KeepAliveTimeout >= e.IdleTimeout {
			out = append(out, Finding{Rule: RuleProxyIdle, Where: p.Where,
				Setting: fmt.Sprintf("upstream keepalive_timeout %s, against %s's idle timeout %s", ms(p.KeepAliveTimeout), e.Service, ms(e.IdleTimeout)),
				Problem: fmt.Sprintf("the proxy keeps an idle connection at least as long as %s does: %s may close one just as the proxy sends a request down it, and the proxy answers 502 (it does not send a POST again)", e.Service, e.Service),
				Fix:     fmt.Sprintf("keep the upstream keepalive_timeout below %s, %s's idle timeout", ms(e.IdleTimeout), e.Service)})
		}
		b := e.Budgets.For(deadline.Interactive).Default
		if p.Connect >= b {
			out = append(out, Finding{Rule: RuleProxyConnect, Where: p.Where,
				Setting: fmt.Sprintf("proxy_connect_timeout %s, against %s %s=%s", ms(p.Connect), e.Service, budgetFlag(deadline.Interactive), ms(b)),
				Problem: fmt.Sprintf("connecting to %s may take %s, not less than the %s a client waits: a %s whose address accepts nothing holds the whole request on the handshake", e.Service, ms(p.Connect), ms(b), e.Service),
				Fix:     fmt.Sprintf("keep proxy_connect_timeout well under the request budget (a quarter of it, or less: %s is one hop away)", e.Service)})
		}
	}
	return out
}
