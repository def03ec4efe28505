// The layering of Mercado's packages, checked: composition sits above what
// it composes, never below.
//
//	pkg/              the mechanisms, a library a reader can open alone:
//	                  the budget (pkg/deadline) and the bulkhead,
//	                  breaker and retry (pkg/resilience/...); imports
//	                  nothing of Mercado outside pkg/
//	internal/         plumbing every service shares: imports no service,
//	                  no lab and no load test
//	internal/resilience
//	                  the chains that put the mechanisms around every
//	                  request and call: import none of the service
//	                  plumbing (serve, admin, postgres, dial) and none of
//	                  the lab's tooling (faults, netfault, budget planning
//	                  and checks)
//	services/<name>   one service each
//	loadtest/         the load generator and its report: sends the traffic
//	                  and measures it; imports no service and no lab, and
//	                  nothing of the shop's admin API or its metrics (a
//	                  scenario arranges the shop through loadtest.Shop)
//	lab/              the labs, the in-process shop and the driver that
//	                  arranges a shop through its admin APIs: compose
//	                  services and the load test
//	cmd/mercado       the one binary, which dispatches to all of them
package mercado_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/mercado-lab/mercado/"

// deps lists, for every package that pattern matches, the module's
// packages it imports directly or indirectly (test files left out).
func deps(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, pattern).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	m := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var own []string
		for _, d := range f[1:] {
			if strings.HasPrefix(d, module) {
				own = append(own, strings.TrimPrefix(d, module))
			}
		}
		m[strings.TrimPrefix(f[0], module)] = own
	}
	return m
}

func TestLayering(t *testing.T) {
	rules := []struct {
		pattern   string
		forbidden []string
	}{
		{"./internal/...", []string{"services/", "lab", "loadtest", "cmd/"}},
		{"./pkg/...", []string{"internal/", "services/", "lab", "loadtest", "cmd/"}},
		{"./internal/resilience/...", []string{"internal/serve", "internal/admin", "internal/postgres", "internal/dial",
			"internal/faults", "internal/netfault", "internal/budget", "internal/budgetcheck", "services/", "lab", "loadtest", "cmd/"}},
		{"./loadtest/...", []string{"services/", "lab", "cmd/", "internal/admin", "internal/telemetry"}},
		{"./services/...", []string{"lab", "loadtest", "cmd/"}},
	}
	for _, r := range rules {
		t.Run(r.pattern, func(t *testing.T) {
			pkgs := deps(t, r.pattern)
			if len(pkgs) == 0 {
				t.Fatalf("%s matched no package", r.pattern)
			}
			for pkg, ds := range pkgs {
				for _, d := range ds {
					for _, f := range r.forbidden {
						if d == strings.TrimSuffix(f, "/") || strings.HasPrefix(d, strings.TrimSuffix(f, "/")+"/") {
							t.Errorf("%s imports %s (nothing under %s may import %s)", pkg, d, r.pattern, f)
						}
					}
				}
			}
		})
	}
}
