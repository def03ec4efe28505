package deploy_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	datasourcesFile = "deploy/grafana/provisioning/datasources/mercado.yml"
	providersFile   = "deploy/grafana/provisioning/dashboards/mercado.yml"
	dashboardsDir   = "deploy/grafana/dashboards"
	namesFile       = "internal/telemetry/names.go"
)

// metricNames are the metric families Mercado exports: the string
// constants mercado_* in internal/telemetry/names.go, read from its source.
func metricNames(t *testing.T) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, namesFile), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(s, "mercado_") {
			names[s] = true
		}
		return true
	})
	if len(names) == 0 {
		t.Fatalf("%s names no metric", namesFile)
	}
	return names
}

// seriesNames are the names a query may use for the families: a
// histogram's series add _bucket, _sum and _count (counters end in _total
// and have none).
func seriesNames(families map[string]bool) map[string]string {
	series := map[string]string{}
	for f := range families {
		series[f] = f
		if !strings.HasSuffix(f, "_total") {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				series[f+suffix] = f
			}
		}
	}
	return series
}

// metricRef is a metric name in a PromQL expression: one Mercado exports
// (mercado_...) or one deploy/prometheus/alerts.yml records
// (mercado:...). Label values such as method="/mercado.orders.v1..." do
// not match: a dot follows "mercado".
var metricRef = regexp.MustCompile(`\bmercado[_:][a-z0-9_:]+`)

// recordedNames are the series alerts.yml's recording rules record.
func recordedNames(t *testing.T) []string {
	t.Helper()
	var rules struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, "deploy/prometheus/alerts.yml", &rules)
	var names []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				names = append(names, r.Record)
			}
		}
	}
	return names
}

// dashboard is the part of a Grafana dashboard this test reads.
type dashboard struct {
	UID         string `json:"uid"`
	Title       string `json:"title"`
	Annotations struct {
		List []struct {
			Name       string      `json:"name"`
			Datasource *datasource `json:"datasource"`
			Enable     bool        `json:"enable"`
			Expr       string      `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	Targets    []struct {
		RefID      string      `json:"refId"`
		Datasource *datasource `json:"datasource"`
		Expr       string      `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// provisioned reads the data sources and dashboard providers Grafana is
// given, and the folder in the container each provider reads.
func provisioned(t *testing.T) (uids map[string]string, providerPaths []string) {
	t.Helper()
	var ds struct {
		Datasources []struct {
			Name string `yaml:"name"`
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
		} `yaml:"datasources"`
	}
	readYAML(t, datasourcesFile, &ds)
	uids = map[string]string{}
	for _, d := range ds.Datasources {
		uids[d.UID] = d.Type
	}
	var prov struct {
		Providers []struct {
			Name    string `yaml:"name"`
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, providersFile, &prov)
	for _, p := range prov.Providers {
		if p.Type != "file" || p.Options.Path == "" {
			t.Errorf("%s: provider %s is not a file provider with a path", providersFile, p.Name)
			continue
		}
		providerPaths = append(providerPaths, p.Options.Path)
	}
	if len(providerPaths) == 0 {
		t.Fatalf("%s: no dashboard provider", providersFile)
	}
	return uids, providerPaths
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// TestGrafanaProvisioning: the grafana service mounts the provisioning
// folder, and the dashboards folder where the provider looks for it.
func TestGrafanaProvisioning(t *testing.T) {
	p := loadCompose(t)
	g := service(t, p, "grafana")
	_, paths := provisioned(t)
	mounts := map[string]string{} // container path -> repository path
	for _, v := range g.Volumes {
		rel, err := filepath.Rel(mustAbs(t, root), v.Source)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		mounts[v.Target] = filepath.ToSlash(rel)
	}
	if mounts["/etc/grafana/provisioning"] != "deploy/grafana/provisioning" {
		t.Errorf("grafana does not mount deploy/grafana/provisioning on /etc/grafana/provisioning: %v", mounts)
	}
	for _, want := range paths {
		if mounts[want] != dashboardsDir {
			t.Errorf("the dashboard provider reads %s, but grafana mounts %s there: %v", want, dashboardsDir, mounts)
		}
	}
	// The home dashboard, when set, is one of the files mounted.
	if home := env(g, "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"); home != "" {
		dir, file := path.Split(home)
		src, ok := mounts[strings.TrimSuffix(dir, "/")]
		if !ok {
			t.Errorf("home dashboard %s is not in a mounted folder", home)
		} else if _, err := os.Stat(filepath.Join(root, src, file)); err != nil {
			t.Errorf("home dashboard %s: %v", home, err)
		}
	}
}

// TestGrafanaDashboards: every dashboard parses, queries a provisioned
// data source, and asks only for metrics Mercado exports.
func TestGrafanaDashboards(t *testing.T) {
	uids, _ := provisioned(t)
	series := seriesNames(metricNames(t))
	for _, r := range recordedNames(t) {
		series[r] = r
	}
	files, err := filepath.Glob(filepath.Join(root, dashboardsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s (%v)", dashboardsDir, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var d dashboard
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatalf("not a dashboard: %v", err)
			}
			if d.UID == "" || d.Title == "" {
				t.Errorf("uid %q, title %q: both must be set", d.UID, d.Title)
			}
			used := map[string]bool{}
			checkExpr := func(where, expr string, ds *datasource) {
				if ds == nil || uids[ds.UID] != "prometheus" || ds.Type != "prometheus" {
					t.Errorf("%s: data source %+v is not the provisioned Prometheus (%v)", where, ds, uids)
				}
				if strings.TrimSpace(expr) == "" {
					t.Errorf("%s: empty query", where)
				}
				refs := metricRef.FindAllString(expr, -1)
				if len(refs) == 0 {
					t.Errorf("%s: %q queries no Mercado metric", where, expr)
				}
				for _, ref := range refs {
					family, ok := series[ref]
					if !ok {
						t.Errorf("%s: %q is not a metric in %s", where, ref, namesFile)
					}
					used[family] = true
				}
			}
			ids := map[int]bool{}
			var walk func([]panel)
			walk = func(ps []panel) {
				for _, p := range ps {
					if ids[p.ID] {
						t.Errorf("panel id %d is used twice", p.ID)
					}
					ids[p.ID] = true
					if p.Type == "row" {
						walk(p.Panels)
						continue
					}
					if len(p.Targets) == 0 {
						t.Errorf("panel %q has no query", p.Title)
					}
					for _, q := range p.Targets {
						ds := q.Datasource
						if ds == nil {
							ds = p.Datasource
						}
						checkExpr("panel "+strconv.Quote(p.Title)+" query "+q.RefID, q.Expr, ds)
					}
				}
			}
			walk(d.Panels)
			for _, a := range d.Annotations.List {
				if a.Expr != "" || (a.Datasource != nil && a.Datasource.Type == "prometheus") {
					checkExpr("annotation "+strconv.Quote(a.Name), a.Expr, a.Datasource)
				}
			}
			if filepath.Base(file) != "mercado.json" {
				return
			}
			// What the shop's dashboard is for (docs/deploy.md, Dashboards).
			for _, family := range []string{
				"mercado_hop_duration_seconds", "mercado_budget_remaining_on_arrival_seconds",
				"mercado_skipped_total", "mercado_late_work_seconds_total",
				"mercado_pool_in_flight", "mercado_pool_capacity", "mercado_pool_waiting",
				"mercado_pool_rejections_total", "mercado_breaker_state", "mercado_mode_changes_total",
				"mercado:hop_headroom_seconds", "mercado_budget_exhausted_total",
			} {
				if !used[family] {
					t.Errorf("no panel or annotation shows %s", family)
				}
			}
		})
	}
}
