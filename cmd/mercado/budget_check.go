package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/budgetcheck"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/flagenv"
	"github.com/mercado-lab/mercado/internal/resilience"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/pkg/deadline"
	"github.com/mercado-lab/mercado/services/catalog"
	"github.com/mercado-lab/mercado/services/gateway"
	"github.com/mercado-lab/mercado/services/orders"
	"github.com/mercado-lab/mercado/services/payments"
	"github.com/mercado-lab/mercado/services/shipping"
)

const budgetCheckUsage = `Usage: mercado budget check [flags]

Checks the guardrails of the shop's timeouts: a dependency's cap above the
longest budget its caller can hold, the edge's HTTP write timeout below a
class's longest budget, retries multiplied across layers, any call with no
cap and no budget, caps that add up to more than the client waits, margin
and floor that make no sense, and (with --from) a cap below the observed
p99 and contracts (GET /admin/budget) that do not compose; and, for an
nginx in front of the gateway (--nginx FILE, or the one --compose mounts),
a read timeout below the longest budget the edge grants, an upstream
keepalive not below the gateway's idle timeout, a connect timeout not
below the request budget.

The configuration checked is, by default, the defaults with the flags
given here (the flags of mercado serve all: --mode, --mechanisms, the
caps, budgets, margin and floor); or a running shop's (--from, the
gateway's admin URL); or a deployment's (--compose FILE, --k8s DIR).

Exits 0 when nothing is found, 1 on findings, 2 on a usage error.

Flags:
`

// errFindings is the check's answer when it found something: exit 1.
var errFindings = errors.New("budget check: findings")

func runBudgetCheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mercado budget check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, budgetCheckUsage)
		fs.PrintDefaults()
	}
	cfg := shop.DefaultConfig("127.0.0.1")
	cfg.Shared.RegisterFlags(fs)
	cfg.Gateway.RegisterEdgeFlags(fs)
	cfg.Orders.RegisterCapFlags(fs)
	from := fs.String("from", "", "a running shop: the gateway's admin URL (every service's is found at its /admin/peers)")
	compose := fs.String("compose", "", "a docker-compose.yml: the services' environment (with the .env beside it)")
	k8sDir := fs.String("k8s", "", "a kustomize directory (k8s/overlays/budgeted): rendered with kubectl kustomize, or read offline")
	nginx := fs.String("nginx", "", "an nginx configuration in front of the gateway: its timeouts against the edge's (with --compose, the one a service mounts is read anyway)")
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return err
	}
	sources := 0
	for _, s := range []string{*from, *compose, *k8sDir} {
		if s != "" {
			sources++
		}
	}
	if sources > 1 {
		return usagef("budget check: give one of --from, --compose and --k8s")
	}
	var (
		s   budgetcheck.Deployment
		err error
	)
	switch {
	case *from != "":
		s, err = shopFromRunning(ctx, strings.TrimSuffix(*from, "/"))
		if err != nil {
			return fmt.Errorf("budget check: %w", err)
		}
	case *compose != "":
		s, err = shopFromCompose(*compose, getenv)
	case *k8sDir != "":
		s, err = shopFromKustomize(ctx, *k8sDir)
	default:
		if err := cfg.Validate(); err != nil {
			return usagef("budget check: %w", err)
		}
		s = shopFromConfig("defaults and flags", cfg.Resolved())
	}
	if err != nil {
		return usagef("budget check: %w", err)
	}
	if *nginx != "" {
		if err := addNginx(&s, *nginx); err != nil {
			return usagef("budget check: --nginx: %w", err)
		}
	}
	findings := budgetcheck.Check(s)
	budgetcheck.Sort(findings)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if findings == nil {
			findings = []budgetcheck.Finding{}
		}
		if err := enc.Encode(struct {
			Source   string                `json:"source"`
			OK       bool                  `json:"ok"`
			Findings []budgetcheck.Finding `json:"findings"`
		}{s.Source, len(findings) == 0, findings}); err != nil {
			return err
		}
	} else {
		printFindings(stdout, s, findings)
	}
	if len(findings) > 0 {
		return fmt.Errorf("%w: %d", errFindings, len(findings))
	}
	return nil
}

func printFindings(w io.Writer, s budgetcheck.Deployment, findings []budgetcheck.Finding) {
	modes := map[string]bool{}
	for _, svc := range s.Services {
		modes[string(svc.Settings.Mode)] = true
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for m := range modes {
			if !yield(m) {
				return
			}
		}
	})
	fmt.Fprintf(w, "budget check of %s (mode %s): ", s.Source, strings.Join(names, ", "))
	if len(findings) == 0 {
		fmt.Fprintln(w, "no findings")
		return
	}
	fmt.Fprintf(w, "%d findings\n", len(findings))
	for i, f := range findings {
		fmt.Fprintf(w, "\n%d. %s: %s\n", i+1, f.Rule, f.Where)
		fmt.Fprintf(w, "   setting: %s\n", f.Setting)
		fmt.Fprintf(w, "   problem: %s\n", f.Problem)
		fmt.Fprintf(w, "   fix:     %s\n", f.Fix)
	}
}

// shopFromConfig is the shop a configuration of the five services runs:
// each service's settings from its own Config, the calls from the
// gateway's and orders' tables, the edge from the gateway's.
func shopFromConfig(source string, c shop.Config) budgetcheck.Deployment {
	gs := c.Gateway.Settings()
	s := budgetcheck.Deployment{Source: source, Edge: *c.Gateway.Edge(gs)}
	s.Services = append(s.Services, budgetcheck.Service{Name: sim.ServiceGateway, Settings: gs, Accepts: accepts(func(k deadline.Class) time.Duration { return c.Gateway.Accepts(gs, k) })})
	ors := c.Orders.Settings()
	s.Services = append(s.Services, budgetcheck.Service{Name: sim.ServiceOrders, Settings: ors, Accepts: serverAccepts(c.Orders.Common)})
	for name, leaf := range map[string]serve.Common{sim.ServiceCatalog: c.Catalog, sim.ServicePayments: c.Payments, sim.ServiceShipping: c.Shipping} {
		s.Services = append(s.Services, budgetcheck.Service{Name: name, Settings: leaf.Settings(), Accepts: serverAccepts(leaf)})
	}
	slices.SortFunc(s.Services, func(a, b budgetcheck.Service) int { return strings.Compare(order(a.Name), order(b.Name)) })
	s.Calls = append(c.Gateway.Calls(gs), c.Orders.Calls(ors)...)
	return s
}

func order(name string) string { return fmt.Sprint(slices.Index(faults.Services(), name)) }

func accepts(f func(deadline.Class) time.Duration) map[deadline.Class]time.Duration {
	out := map[deadline.Class]time.Duration{}
	for _, k := range []deadline.Class{deadline.Interactive, deadline.Background, deadline.Batch} {
		out[k] = f(k)
	}
	return out
}

// serverAccepts is what a gRPC service with configuration c accepts.
func serverAccepts(c serve.Common) map[deadline.Class]time.Duration {
	s := c.Settings()
	return accepts(func(k deadline.Class) time.Duration { return resilience.AcceptedDeadline(s, deadline.Budgets{}, k) })
}

// shopFromEnv is the shop whose services read their flags from the
// environments given, one per service (MERCADO_SOME_NAME for
// --some-name): each through its own Config, as `mercado serve <name>`
// does.
func shopFromEnv(source string, envs map[string]map[string]string) (budgetcheck.Deployment, error) {
	c := shop.DefaultConfig("127.0.0.1")
	parse := func(name string, register func(*flag.FlagSet)) error {
		env, ok := envs[name]
		if !ok {
			return fmt.Errorf("%s: no %s service found", source, name)
		}
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		register(fs)
		if err := flagenv.Parse(fs, nil, func(k string) string { return env[k] }); err != nil {
			return fmt.Errorf("%s: %s: %w", source, name, err)
		}
		return nil
	}
	c.Gateway, c.Orders = gateway.DefaultConfig(), orders.DefaultConfig()
	c.Catalog, c.Payments, c.Shipping = catalog.DefaultConfig(), payments.DefaultConfig(), shipping.DefaultConfig()
	errs := []error{
		parse(sim.ServiceGateway, c.Gateway.RegisterFlags),
		parse(sim.ServiceOrders, c.Orders.RegisterFlags),
		parse(sim.ServiceCatalog, c.Catalog.RegisterFlags),
		parse(sim.ServicePayments, c.Payments.RegisterFlags),
		parse(sim.ServiceShipping, c.Shipping.RegisterFlags),
	}
	if err := errors.Join(errs...); err != nil {
		return budgetcheck.Deployment{}, err
	}
	return shopFromConfig(source, c), nil
}

// shopFromCompose reads a docker-compose file's services (`command:
// [serve, <name>]`) and their environment, with ${VAR:-default} taken
// from the process's environment, then the .env file beside it, then the
// default, as docker compose does.
func shopFromCompose(path string, getenv func(string) string) (budgetcheck.Deployment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return budgetcheck.Deployment{}, err
	}
	dotenv := readDotenv(filepath.Join(filepath.Dir(path), ".env"))
	lookup := func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return dotenv[k]
	}
	var file struct {
		Services map[string]struct {
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		return budgetcheck.Deployment{}, fmt.Errorf("%s: %w", path, err)
	}
	envs := map[string]map[string]string{}
	for _, svc := range file.Services {
		if len(svc.Command) < 2 || svc.Command[0] != "serve" {
			continue
		}
		env := map[string]string{}
		for k, v := range svc.Environment {
			env[k] = interpolate(v, lookup)
		}
		envs[svc.Command[1]] = env
	}
	s, err := shopFromEnv(filepath.Base(path), envs)
	if err != nil {
		return s, err
	}
	// The proxy in front of the gateway, where a service mounts an nginx
	// configuration.
	return s, addNginx(&s, nginxConfigs(path, data)...)
}

var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:?-([^}]*))?\}`)

// interpolate expands ${VAR}, ${VAR:-default} and ${VAR-default}.
func interpolate(v string, lookup func(string) string) string {
	return composeVar.ReplaceAllStringFunc(v, func(m string) string {
		p := composeVar.FindStringSubmatch(m)
		if got := lookup(p[1]); got != "" {
			return got
		}
		return p[3]
	})
}

// readDotenv reads KEY=VALUE lines; a missing file is empty.
func readDotenv(path string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return out
}

// k8sDoc is what the check reads of a rendered manifest.
type k8sDoc struct {
	Kind     string                `yaml:"kind"`
	Metadata struct{ Name string } `yaml:"metadata"`
	Data     map[string]string     `yaml:"data"`
	Spec     struct {
		Template struct {
			Spec struct {
				Containers []struct {
					Args    []string `yaml:"args"`
					EnvFrom []struct {
						ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
					} `yaml:"envFrom"`
					Env []struct {
						Name  string  `yaml:"name"`
						Value *string `yaml:"value"`
					} `yaml:"env"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// shopFromKustomize renders dir with kubectl kustomize when kubectl is
// installed, and otherwise reads the overlay's and its bases' files
// itself (resources, and configMapGenerator literals merged over the
// base's): enough for Mercado's own overlays, offline.
func shopFromKustomize(ctx context.Context, dir string) (budgetcheck.Deployment, error) {
	var docs []k8sDoc
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		cmd := exec.CommandContext(ctx, kubectl, "kustomize", dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return budgetcheck.Deployment{}, fmt.Errorf("kubectl kustomize %s: %v: %s", dir, err, strings.TrimSpace(stderr.String()))
		}
		if docs, err = decodeDocs(out); err != nil {
			return budgetcheck.Deployment{}, fmt.Errorf("kubectl kustomize %s: %w", dir, err)
		}
	} else {
		var err error
		if docs, _, err = readKustomization(dir); err != nil {
			return budgetcheck.Deployment{}, err
		}
	}
	return shopFromK8sDocs(filepath.Clean(dir), docs)
}

func decodeDocs(data []byte) ([]k8sDoc, error) {
	var docs []k8sDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var d k8sDoc
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			return docs, nil
		} else if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
}

// readKustomization reads dir's resources (and its bases', recursively)
// and returns them with the generated ConfigMaps' literals (by name), the
// overlay's merged over the base's. Generated names keep their plain
// name: the references to them are plain too before kustomize hashes
// both.
func readKustomization(dir string) ([]k8sDoc, map[string]map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, nil, err
	}
	var k struct {
		Resources          []string `yaml:"resources"`
		ConfigMapGenerator []struct {
			Name     string   `yaml:"name"`
			Literals []string `yaml:"literals"`
		} `yaml:"configMapGenerator"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, "kustomization.yaml"), err)
	}
	var docs []k8sDoc
	maps := map[string]map[string]string{}
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			sub, subMaps, err := readKustomization(p)
			if err != nil {
				return nil, nil, err
			}
			docs = append(docs, sub...)
			for name, m := range subMaps {
				maps[name] = m
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, err
		}
		d, err := decodeDocs(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		docs = append(docs, d...)
	}
	for _, g := range k.ConfigMapGenerator {
		if maps[g.Name] == nil {
			maps[g.Name] = map[string]string{}
		}
		for _, l := range g.Literals {
			if key, v, ok := strings.Cut(l, "="); ok {
				maps[g.Name][key] = v
			}
		}
	}
	// The ConfigMaps, as kustomize would render them.
	out := slices.DeleteFunc(docs, func(d k8sDoc) bool { return d.Kind == "ConfigMap" && maps[d.Metadata.Name] != nil })
	for name, m := range maps {
		d := k8sDoc{Kind: "ConfigMap", Data: m}
		d.Metadata.Name = name
		out = append(out, d)
	}
	return out, maps, nil
}

// generatedName matches a generated ConfigMap's name with its hash.
var generatedName = regexp.MustCompile(`-[a-z0-9]{10}$`)

// shopFromK8sDocs reads the Deployments that run `serve <name>`: each
// one's environment, from its ConfigMaps (envFrom) and its own values.
func shopFromK8sDocs(source string, docs []k8sDoc) (budgetcheck.Deployment, error) {
	configMaps := map[string]map[string]string{}
	for _, d := range docs {
		if d.Kind == "ConfigMap" {
			configMaps[d.Metadata.Name] = d.Data
		}
	}
	envs := map[string]map[string]string{}
	for _, d := range docs {
		if d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if len(c.Args) < 2 || c.Args[0] != "serve" {
				continue
			}
			env := map[string]string{}
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef == nil {
					continue
				}
				m, ok := configMaps[ef.ConfigMapRef.Name]
				if !ok {
					m = configMaps[generatedName.ReplaceAllString(ef.ConfigMapRef.Name, "")]
				}
				for k, v := range m {
					env[k] = v
				}
			}
			for _, e := range c.Env {
				if e.Value != nil {
					env[e.Name] = *e.Value
				}
			}
			envs[c.Args[1]] = env
		}
	}
	return shopFromEnv(source, envs)
}

// shopFromRunning reads the contract of every service of a running shop:
// the gateway's at adminURL, the others' at the URLs its /admin/peers
// lists.
func shopFromRunning(ctx context.Context, adminURL string) (budgetcheck.Deployment, error) {
	gw := admin.Client{URL: adminURL}
	peers, err := gw.Peers(ctx)
	if err != nil {
		return budgetcheck.Deployment{}, err
	}
	urls := []string{adminURL}
	for _, p := range peers {
		urls = append(urls, strings.TrimSuffix(p.URL, "/"))
	}
	var contracts []budgetcheck.Contract
	for _, u := range urls {
		var c budgetcheck.Contract
		if err := (admin.Client{URL: u}).Read(ctx, "/admin/budget", &c); err != nil {
			return budgetcheck.Deployment{}, fmt.Errorf("%s: %w", u, err)
		}
		contracts = append(contracts, c)
	}
	s := budgetcheck.FromContracts(adminURL, contracts)
	if s.Edge.Service == "" {
		return budgetcheck.Deployment{}, fmt.Errorf("%s: no contract describes the edge: give the gateway's admin URL", adminURL)
	}
	return s, nil
}
