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
//	internal/sim      the seam between a service and the lab: the
//	                  Simulator a service is handed, the error of a
//	                  simulated failure and the names of the services and
//	                  their simulated methods; imports none of the lab's
//	                  tooling and none of the service plumbing (serve,
//	                  admin, postgres, dial)
//	internal/faults, internal/netfault, internal/budget, internal/budgetcheck
//	                  the lab's tooling: imports no service
//	services/<name>   one service each; reaches the lab's tooling only
//	                  through internal/sim: none of its own (non-test)
//	                  files imports faults, netfault or budget
//	                  (internal/serve, the kit that builds the simulator it
//	                  is handed, may; budgetcheck is the model a service
//	                  describes its calls in)
//	loadtest/         the load generator and its report: sends the traffic
//	                  and measures it; imports no service and no lab, and
//	                  nothing of the shop's admin API or its metrics (a
//	                  scenario arranges the shop through loadtest.Target)
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

// deps lists, for every package that the patterns (separated by spaces)
// match, the module's packages it imports directly or indirectly, or
// directly only (test files left out either way).
func deps(t *testing.T, patterns string, direct bool) map[string][]string {
	t.Helper()
	field := "Deps"
	if direct {
		field = "Imports"
	}
	args := append([]string{"list", "-f", `{{.ImportPath}}{{range .` + field + `}} {{.}}{{end}}`}, strings.Fields(patterns)...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", patterns, err)
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
	tooling := []string{"internal/faults", "internal/netfault", "internal/budget", "internal/budgetcheck", "internal/stall"}
	rules := []struct {
		pattern   string
		direct    bool // only the packages' own imports, not their dependencies'
		forbidden []string
	}{
		{"./internal/...", false, []string{"services/", "lab", "loadtest", "cmd/"}},
		{"./pkg/...", false, []string{"internal/", "services/", "lab", "loadtest", "cmd/"}},
		{"./internal/resilience/...", false, []string{"internal/serve", "internal/admin", "internal/postgres", "internal/dial",
			"internal/faults", "internal/netfault", "internal/budget", "internal/budgetcheck", "services/", "lab", "loadtest", "cmd/"}},
		{"./loadtest/...", false, []string{"services/", "lab", "cmd/", "internal/admin", "internal/telemetry"}},
		{"./services/...", false, []string{"lab", "loadtest", "cmd/"}},
		// The seam: a service is handed its simulated work through
		// internal/sim, which knows nothing of the tooling behind it, and
		// the tooling knows nothing of the services. (The budget model,
		// budgetcheck, is the services' to describe their calls in.)
		{"./services/...", true, []string{"internal/faults", "internal/netfault", "internal/budget", "internal/stall"}},
		{"./internal/sim", false, append([]string{"internal/serve", "internal/admin", "internal/postgres", "internal/dial"}, tooling...)},
		{"./" + strings.Join(tooling, " ./"), false, []string{"services/"}},
	}
	for _, r := range rules {
		how := ""
		if r.direct {
			how = " directly"
		}
		t.Run(r.pattern+how, func(t *testing.T) {
			pkgs := deps(t, r.pattern, r.direct)
			if len(pkgs) == 0 {
				t.Fatalf("%s matched no package", r.pattern)
			}
			for pkg, ds := range pkgs {
				for _, d := range ds {
					for _, f := range r.forbidden {
						if d == strings.TrimSuffix(f, "/") || strings.HasPrefix(d, strings.TrimSuffix(f, "/")+"/") {
							t.Errorf("%s imports %s%s (nothing under %s may import %s%s)", pkg, d, how, r.pattern, f, how)
						}
					}
				}
			}
		})
	}
}
