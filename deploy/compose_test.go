package deploy_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"

	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/loadtest"
)

// mercadoServices are the five services and the listen addresses their
// code defaults to.
func mercadoServices() map[string]serve.Common { return shop.Defaults() }

// port is the port of a listen address such as ":9080".
func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("listen address %q: %v", addr, err)
	}
	return p
}

// loadCompose reads docker-compose.yml as `docker compose --profile '*'`
// does in the repository's root: with .env for the variables (and
// nothing from this shell), every profile enabled.
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	return loadComposeEnv(t)
}

// loadComposeEnv is loadCompose with variables set as in the shell
// ("MERCADO_IMAGE=mercado:dev"), which win over .env.
func loadComposeEnv(t *testing.T, env ...string) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions(
		[]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithWorkingDirectory(root),
		cli.WithEnv(env),
		cli.WithEnvFiles(filepath.Join(root, ".env")),
		cli.WithDotEnv,
		cli.WithProfiles([]string{"*"}),
	)
	if err != nil {
		t.Fatalf("compose options: %v", err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("loading docker-compose.yml: %v", err)
	}
	return p
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return s
}

func env(s types.ServiceConfig, name string) string {
	if v := s.Environment[name]; v != nil {
		return *v
	}
	return ""
}

func TestComposeProject(t *testing.T) {
	p := loadCompose(t)
	if p.Name != "mercado" {
		t.Errorf("project name %q, want mercado (COMPOSE_PROJECT_NAME in .env)", p.Name)
	}
	want := []string{"catalog", "gateway", "grafana", "jaeger", "lab", "netproxy", "nginx", "orders", "payments", "postgres", "prometheus", "shipping"}
	if got := sortedKeys(p.Services); !slices.Equal(got, want) {
		t.Errorf("services %v, want %v", got, want)
	}
}

// TestComposeServices: each of the five runs `mercado serve <name>` on its
// code's default ports, locked down, with only variables it reads.
func TestComposeServices(t *testing.T) {
	p := loadCompose(t)
	for name, defaults := range mercadoServices() {
		t.Run(name, func(t *testing.T) {
			s := service(t, p, name)
			if want := []string{"serve", name}; !slices.Equal(s.Command, want) {
				t.Fatalf("command %v, want %v", s.Command, want)
			}
			reads := envNames(t, "serve", name) // also proves `mercado serve <name>` exists
			for _, k := range sortedKeys(s.Environment) {
				if strings.HasPrefix(k, "MERCADO_") && !reads[k] {
					t.Errorf("environment %s: `mercado serve %s` reads no such variable (it reads %v)", k, name, sortedKeys(reads))
				}
			}
			if got, want := env(s, "MERCADO_ADDR"), defaults.Addr; got != want {
				t.Errorf("MERCADO_ADDR = %q, want %q (the code's default)", got, want)
			}
			// Prometheus and the gateway's mode fan-out reach the admin port
			// from their own containers: it listens on every interface, off
			// the code's loopback default, so it needs a token or the
			// explicit opt-in (serve.Common.Validate).
			if got, want := env(s, "MERCADO_ADMIN_ADDR"), ":"+port(t, defaults.AdminAddr); got != want {
				t.Errorf("MERCADO_ADMIN_ADDR = %q, want %q (the code's default port, on every interface)", got, want)
			}
			if env(s, "MERCADO_ADMIN_TOKEN") == "" && env(s, "MERCADO_ADMIN_INSECURE") != "true" {
				t.Errorf("the admin port is reachable from the compose network without MERCADO_ADMIN_TOKEN, " +
					"and MERCADO_ADMIN_INSECURE is not true: `mercado serve` would refuse to start")
			}
			if got := env(s, "MERCADO_MODE"); got != "budgeted" {
				t.Errorf("MERCADO_MODE = %q, want budgeted (from .env)", got)
			}

			// The image: FROM scratch, so the health check runs the binary.
			hc := s.HealthCheck
			wantTest := []string{"CMD", "/mercado", "healthcheck", "http://127.0.0.1:" + port(t, defaults.AdminAddr) + "/readyz"}
			switch {
			case hc == nil || hc.Disable:
				t.Errorf("no healthcheck, want test %v", wantTest)
			case !slices.Equal([]string(hc.Test), wantTest):
				t.Errorf("healthcheck test %v, want %v", hc.Test, wantTest)
			}
			if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") || !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
				t.Errorf("not locked down: read_only=%t cap_drop=%v security_opt=%v", s.ReadOnly, s.CapDrop, s.SecurityOpt)
			}
			if want := releasedImage(t); s.Image != want || s.Build == nil || s.Build.Context != mustAbs(t, root) {
				t.Errorf("image %q built from %v, want %s, built from the repository with --build", s.Image, s.Build, want)
			}
		})
	}
}

// releasedTag is the form of a release's tag: v1.2.3 (a pre-release,
// v1.2.3-rc.1, is never the compose file's default).
var releasedTag = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// releasedImage is the image docker-compose.yml runs by default: the one
// .goreleaser.yaml publishes, at a release's tag.
func releasedImage(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Dockers []struct {
			Images []string `yaml:"images"`
		} `yaml:"dockers_v2"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if len(cfg.Dockers) != 1 || len(cfg.Dockers[0].Images) != 1 {
		t.Fatalf(".goreleaser.yaml: dockers_v2 %+v, want one image", cfg.Dockers)
	}
	image := cfg.Dockers[0].Images[0]
	p := loadCompose(t)
	got := service(t, p, "gateway").Image
	name, tag, _ := strings.Cut(got, ":")
	if name != image || !releasedTag.MatchString(tag) {
		t.Fatalf("docker-compose.yml runs %q by default, want %s:vX.Y.Z, the image .goreleaser.yaml publishes at a release's tag", got, image)
	}
	return got
}

// TestComposeImage: every service that runs mercado runs one image, the
// released one unless MERCADO_IMAGE names another, and builds it from the
// repository's Dockerfile when asked (--build): the scripts that start the
// stack on a machine that cannot pull set MERCADO_IMAGE=mercado:dev.
func TestComposeImage(t *testing.T) {
	released := releasedImage(t)
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, released},
		{[]string{"MERCADO_IMAGE=mercado:dev"}, "mercado:dev"},
	} {
		p := loadComposeEnv(t, tc.env...)
		var runs []string
		for _, name := range sortedKeys(p.Services) {
			s := p.Services[name]
			if s.Build == nil {
				continue
			}
			runs = append(runs, name)
			if s.Image != tc.want {
				t.Errorf("%v: %s runs image %q, want %q", tc.env, name, s.Image, tc.want)
			}
			if s.Build.Context != mustAbs(t, root) || (s.Build.Dockerfile != "" && s.Build.Dockerfile != "Dockerfile") {
				t.Errorf("%v: %s builds from %s/%s, want the repository's Dockerfile", tc.env, name, s.Build.Context, s.Build.Dockerfile)
			}
		}
		want := []string{"catalog", "gateway", "lab", "netproxy", "orders", "payments", "shipping"}
		if !slices.Equal(runs, want) {
			t.Errorf("%v: the services built from the repository are %v, want %v", tc.env, runs, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "Dockerfile.release")); err != nil {
		t.Errorf("the released image's Dockerfile: %v", err)
	}
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// netproxyLinks are the links the netproxy service proxies, by link name
// ("orders-shipping"): the port it listens on for the link and the
// address it passes the bytes to.
func netproxyLinks(t *testing.T, p *types.Project) map[string][2]string {
	t.Helper()
	links := map[string][2]string{}
	for part := range strings.SplitSeq(env(service(t, p, "netproxy"), "MERCADO_LINK"), ";") {
		name, addrs, _ := strings.Cut(strings.TrimSpace(part), "=")
		listen, upstream, ok := strings.Cut(addrs, ",")
		if !ok {
			t.Fatalf("netproxy: MERCADO_LINK part %q: want LINK=LISTEN,UPSTREAM", part)
		}
		links[name] = [2]string{port(t, listen), upstream}
	}
	return links
}

// TestComposeNetproxy: the wire runs `mercado serve netproxy`, locked
// down like the services, with a link for every call between the
// services, each passed to the callee's own port.
func TestComposeNetproxy(t *testing.T) {
	p := loadCompose(t)
	s := service(t, p, "netproxy")
	if want := []string{"serve", "netproxy"}; !slices.Equal(s.Command, want) {
		t.Fatalf("command %v, want %v", s.Command, want)
	}
	reads := envNames(t, "serve", "netproxy")
	for _, k := range sortedKeys(s.Environment) {
		if strings.HasPrefix(k, "MERCADO_") && !reads[k] {
			t.Errorf("environment %s: `mercado serve netproxy` reads no such variable (it reads %v)", k, sortedKeys(reads))
		}
	}
	if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") || s.Image != releasedImage(t) {
		t.Errorf("not the locked-down mercado image: read_only=%t cap_drop=%v image %q", s.ReadOnly, s.CapDrop, s.Image)
	}
	defaults := mercadoServices()
	links := netproxyLinks(t, p)
	for _, link := range []string{"gateway-orders", "gateway-catalog", "orders-catalog", "orders-payments", "orders-shipping"} {
		l, ok := links[link]
		if !ok {
			t.Errorf("no link %s", link)
			continue
		}
		_, callee, _ := strings.Cut(link, "-")
		if want := callee + ":" + port(t, defaults[callee].Addr); l[1] != want {
			t.Errorf("%s passes to %s, want %s", link, l[1], want)
		}
	}
	if len(links) != 5 {
		t.Errorf("links %v, want the five calls between the services", sortedKeys(links))
	}
}

// TestComposeWiring: every address a service is given points at the
// compose service of that name, on the port that service listens on, or
// at the netproxy's port for the link from this service to that one; and
// the service waits until the one it calls is healthy.
func TestComposeWiring(t *testing.T) {
	p := loadCompose(t)
	defaults := mercadoServices()
	listens := map[string]string{"postgres": "5432"}
	for name, c := range defaults {
		listens[name] = port(t, c.Addr)
	}
	links := netproxyLinks(t, p)
	for _, name := range sortedKeys(p.Services) {
		s := p.Services[name]
		for _, k := range sortedKeys(s.Environment) {
			v := env(s, k)
			var host, prt string
			switch {
			case k == "MERCADO_DATABASE_URL":
				u, err := url.Parse(v)
				if err != nil {
					t.Errorf("%s: %s: %v", name, k, err)
					continue
				}
				host, prt = u.Hostname(), u.Port()
			case strings.HasPrefix(k, "MERCADO_") && strings.HasSuffix(k, "_ADDR") && k != "MERCADO_ADDR" && k != "MERCADO_ADMIN_ADDR":
				var err error
				if host, prt, err = net.SplitHostPort(v); err != nil {
					t.Errorf("%s: %s=%q: %v", name, k, v, err)
					continue
				}
			default:
				continue
			}
			if host == "netproxy" {
				// MERCADO_SHIPPING_ADDR of orders: the link orders-shipping.
				callee := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(k, "MERCADO_"), "_ADDR"))
				l, ok := links[name+"-"+callee]
				if !ok || l[0] != prt {
					t.Errorf("%s: %s=%q is not netproxy's port for the link %s-%s (links %v)", name, k, v, name, callee, links)
				}
				if d, ok := s.DependsOn[callee]; !ok || d.Condition != types.ServiceConditionHealthy {
					t.Errorf("%s: calls %s through netproxy but does not wait until it is healthy", name, callee)
				}
				if d, ok := s.DependsOn[host]; !ok || d.Condition != types.ServiceConditionHealthy {
					t.Errorf("%s: %s goes through netproxy, but it does not wait until netproxy is healthy", name, k)
				}
				continue
			}
			if listens[host] == "" {
				t.Errorf("%s: %s=%q names no service of the stack", name, k, v)
				continue
			}
			if prt != listens[host] {
				t.Errorf("%s: %s=%q: %s listens on %s", name, k, v, host, listens[host])
			}
			if d, ok := s.DependsOn[host]; !ok || d.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s: calls %s (%s) but does not wait until it is healthy (depends_on %v)", name, host, k, s.DependsOn)
			}
		}
	}

	// The gateway's mode switch fans out to every other service's admin port.
	gw := service(t, p, "gateway")
	var peers []string
	for _, peer := range strings.Split(env(gw, "MERCADO_ADMIN_PEERS"), ",") {
		name, u, _ := strings.Cut(peer, "=")
		c, ok := defaults[name]
		if !ok || name == "gateway" {
			t.Errorf("MERCADO_ADMIN_PEERS: %q is not another Mercado service", peer)
			continue
		}
		if want := "http://" + name + ":" + port(t, c.AdminAddr); u != want {
			t.Errorf("MERCADO_ADMIN_PEERS: %s=%s, want %s", name, u, want)
		}
		peers = append(peers, name)
	}
	slices.Sort(peers)
	if want := []string{"catalog", "orders", "payments", "shipping"}; !slices.Equal(peers, want) {
		t.Errorf("MERCADO_ADMIN_PEERS reaches %v, want %v", peers, want)
	}
}

// TestComposeDependsOn: start-up is health-gated. A dependency on a
// service with a health check waits for it to be healthy; only the
// observability UIs, whose images have no health check to run, wait for a
// start alone.
func TestComposeDependsOn(t *testing.T) {
	p := loadCompose(t)
	for _, name := range []string{"postgres", "gateway", "orders", "catalog", "payments", "shipping", "netproxy"} {
		if s := service(t, p, name); s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 || s.HealthCheck.Disable {
			t.Errorf("%s has no health check", name)
		}
	}
	for _, name := range sortedKeys(p.Services) {
		s := p.Services[name]
		for _, dep := range sortedKeys(s.DependsOn) {
			d := s.DependsOn[dep]
			target := p.Services[dep]
			if target.HealthCheck != nil && !target.HealthCheck.Disable {
				if d.Condition != types.ServiceConditionHealthy {
					t.Errorf("%s depends on %s with condition %q, want %s", name, dep, d.Condition, types.ServiceConditionHealthy)
				}
				continue
			}
			if !slices.Contains(s.Profiles, "observability") {
				t.Errorf("%s depends on %s, which has no health check", name, dep)
			}
		}
	}
	if lab := service(t, p, "lab"); lab.DependsOn["gateway"].Condition != types.ServiceConditionHealthy {
		t.Errorf("lab does not wait for a healthy gateway: %v", lab.DependsOn)
	}
}

// TestComposePublishedPorts: only the shop's front door (nginx, in front
// of the gateway, on the gateway's port), the gateway's admin port (the
// live console) and the three UIs are published, and only on the
// loopback address.
func TestComposePublishedPorts(t *testing.T) {
	p := loadCompose(t)
	want := map[string]string{
		"nginx":      port(t, mercadoServices()["gateway"].Addr),
		"gateway":    port(t, mercadoServices()["gateway"].AdminAddr),
		"jaeger":     "16686",
		"prometheus": "9090",
		"grafana":    "3000",
	}
	for _, name := range sortedKeys(p.Services) {
		for _, pc := range p.Services[name].Ports {
			if pc.Published == "" {
				continue
			}
			if want[name] == "" {
				t.Errorf("%s publishes %s:%d, but only %v may publish", name, pc.Published, pc.Target, sortedKeys(want))
				continue
			}
			if pc.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes port %s on %q, want 127.0.0.1 only", name, pc.Published, pc.HostIP)
			}
			if pc.Published != want[name] || strconv.FormatUint(uint64(pc.Target), 10) != want[name] {
				t.Errorf("%s publishes %s:%d, want %s:%s", name, pc.Published, pc.Target, want[name], want[name])
			}
			delete(want, name)
		}
	}
	for name, p := range want {
		t.Errorf("%s does not publish 127.0.0.1:%s", name, p)
	}
}

// TestComposeLab: the one-shot load test runs a real command of the
// binary, with only variables that command reads.
func TestComposeLab(t *testing.T) {
	p := loadCompose(t)
	lab := service(t, p, "lab")
	if len(lab.Entrypoint) < 2 || lab.Entrypoint[0] != "/mercado" || lab.Entrypoint[1] != "load" {
		t.Fatalf("lab entrypoint %v, want `/mercado load ...`", lab.Entrypoint)
	}
	if n := len(lab.Command); n == 0 || !slices.Contains(loadtest.Builtin(), lab.Command[n-1]) {
		t.Errorf("lab command %v, want it to end with a built-in scenario's name", lab.Command)
	}
	reads := envNames(t, "load")
	for _, k := range sortedKeys(lab.Environment) {
		if strings.HasPrefix(k, "MERCADO_") && !reads[k] {
			t.Errorf("lab environment %s: `mercado load` reads no such variable", k)
		}
	}
	for _, arg := range lab.Entrypoint {
		if strings.HasPrefix(arg, "http://") {
			u, err := url.Parse(arg)
			if err != nil || u.Port() == "" {
				t.Errorf("lab: %q is not a service URL", arg)
				continue
			}
			if u.Hostname() == "netproxy" { // the wire's admin API, as compose sets it
				if admin := service(t, p, "netproxy").Environment["MERCADO_ADMIN_ADDR"]; admin == nil || u.Port() != port(t, *admin) {
					t.Errorf("lab: %s is not the wire's admin port", arg)
				}
				continue
			}
			c, ok := mercadoServices()[u.Hostname()]
			if !ok || (u.Port() != port(t, c.Addr) && u.Port() != port(t, c.AdminAddr)) {
				t.Errorf("lab: %s is not a port a Mercado service listens on", arg)
			}
		}
	}
}

// TestPrometheusTargets: Prometheus scrapes /metrics on every admin port,
// and the compose file mounts that very configuration.
func TestPrometheusTargets(t *testing.T) {
	p := loadCompose(t)
	const cfgPath = "deploy/prometheus/prometheus.yml"
	prom := service(t, p, "prometheus")
	mounted := false
	for _, v := range prom.Volumes {
		if v.Source == mustAbs(t, filepath.Join(root, cfgPath)) && v.Target == "/etc/prometheus/prometheus.yml" {
			mounted = true
		}
	}
	if !mounted || !slices.Contains(prom.Command, "--config.file=/etc/prometheus/prometheus.yml") {
		t.Errorf("prometheus does not run with %s: volumes %v, command %v", cfgPath, prom.Volumes, prom.Command)
	}

	b, err := os.ReadFile(filepath.Join(root, cfgPath))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("%s: %v", cfgPath, err)
	}
	var got []string
	for _, sc := range cfg.ScrapeConfigs {
		if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
			t.Errorf("job %s scrapes %s, want /metrics", sc.JobName, sc.MetricsPath)
		}
		for _, st := range sc.StaticConfigs {
			got = append(got, st.Targets...)
		}
	}
	var want []string
	for name, c := range mercadoServices() {
		want = append(want, name+":"+port(t, c.AdminAddr))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s scrapes %v, want every admin port: %v", cfgPath, got, want)
	}
}

// composeVariable is a variable docker-compose.yml interpolates.
var composeVariable = regexp.MustCompile(`\$\{([A-Z0-9_]+)`)

// envKnob is a variable set, or shown commented out, in .env.
var envKnob = regexp.MustCompile(`(?m)^#?([A-Z][A-Z0-9_]*)=`)

// TestDotEnv: each knob in .env, set or shown as an example, is one that
// docker-compose.yml passes on.
func TestDotEnv(t *testing.T) {
	compose, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dotenv, err := os.ReadFile(filepath.Join(root, ".env"))
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{"COMPOSE_PROJECT_NAME": true}
	for _, m := range composeVariable.FindAllStringSubmatch(string(compose), -1) {
		used[m[1]] = true
	}
	knobs := envKnob.FindAllStringSubmatch(string(dotenv), -1)
	if len(knobs) == 0 {
		t.Fatal(".env sets nothing")
	}
	for _, m := range knobs {
		if !used[m[1]] {
			t.Errorf(".env: %s is not a variable docker-compose.yml uses", m[1])
		}
	}
}
