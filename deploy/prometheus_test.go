package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPrometheusRules runs promtool over deploy/prometheus/alerts.yml:
// `check rules` (it parses, every expression is valid PromQL) and `test
// rules alerts_test.yml` (each alert fires on its firing series and stays
// silent on the others). Off CI a machine without promtool skips it; on
// CI (CI set) promtool must be there: .ci/run installs it.
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not on PATH, and CI is set: .ci/run installs it (Debian's prometheus package)")
		}
		t.Skip("promtool is not on PATH (install Debian's prometheus package, or run .ci/run); CI is unset, so skipping")
	}
	dir := filepath.Join(root, "deploy", "prometheus")
	for _, args := range [][]string{
		{"check", "rules", "alerts.yml"},
		{"test", "rules", "alerts_test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// TestPrometheusLoadsTheRules: the compose stack's Prometheus reads
// alerts.yml, where prometheus.yml's rule_files say.
func TestPrometheusLoadsTheRules(t *testing.T) {
	var cfg struct {
		RuleFiles []string `yaml:"rule_files"`
	}
	readYAML(t, "deploy/prometheus/prometheus.yml", &cfg)
	if len(cfg.RuleFiles) != 1 || cfg.RuleFiles[0] != "/etc/prometheus/alerts.yml" {
		t.Fatalf("prometheus.yml rule_files = %v; want [/etc/prometheus/alerts.yml]", cfg.RuleFiles)
	}
	p := loadCompose(t)
	mounted := false
	for _, v := range service(t, p, "prometheus").Volumes {
		if v.Target == "/etc/prometheus/alerts.yml" && filepath.Base(v.Source) == "alerts.yml" {
			mounted = true
		}
	}
	if !mounted {
		t.Error("docker-compose.yml does not mount deploy/prometheus/alerts.yml on /etc/prometheus/alerts.yml")
	}
}
