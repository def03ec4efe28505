package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/budgetcheck"
)

// The nginx in front of the gateway is checked with the shop: the
// shipped configuration passes; each bad timeout is a finding that names
// the file, the line of its location and the value; a configuration the
// check cannot read is a usage error.
func TestBudgetCheckNginx(t *testing.T) {
	good, err := os.ReadFile("../../deploy/nginx/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edit := func(old, new string) string {
		if !strings.Contains(string(good), old) {
			t.Fatalf("deploy/nginx/nginx.conf has no %q", old)
		}
		return strings.Replace(string(good), old, new, 1)
	}

	if code, out := budgetCheck(t, nil, "--nginx", "../../deploy/nginx/nginx.conf"); code != 0 {
		t.Fatalf("deploy/nginx/nginx.conf: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		name, src string
		args      []string
		rule      string
		want      []string
	}{
		{"nginx's default read timeout", edit("proxy_read_timeout 1830s;", ""), nil, budgetcheck.RuleProxyRead,
			[]string{"proxy_read_timeout 1m0s, against gateway --batch-max-budget=30m0s"}},
		{"a read timeout below the interactive maximum", edit("proxy_read_timeout 1830s;", "proxy_read_timeout 5s;"),
			[]string{"--mechanisms", "classes=off"}, budgetcheck.RuleProxyRead, []string{"against gateway --max-budget=10s"}},
		{"idle longer than the gateway's", edit("keepalive_timeout 60s;", "keepalive_timeout 90s;"), nil, budgetcheck.RuleProxyIdle,
			[]string{"upstream keepalive_timeout 1m30s, against gateway's idle timeout 1m30s"}},
		{"an upstream keepalive with nginx's default timeout", edit("keepalive_timeout 60s;", ""), []string{"--budget", "500ms"}, "", nil},
		{"connect as long as the budget", edit("proxy_connect_timeout 300ms;", "proxy_connect_timeout 1200ms;"), nil, budgetcheck.RuleProxyConnect,
			[]string{"proxy_connect_timeout 1.2s, against gateway --budget=1.2s"}},
		{"connect set at the server level", edit("proxy_connect_timeout 300ms;", "") + "\n", nil, budgetcheck.RuleProxyConnect,
			[]string{"proxy_connect_timeout 1m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write("nginx.conf", tc.src)
			code, r := budgetCheckJSON(t, nil, append([]string{"--nginx", p}, tc.args...)...)
			if tc.rule == "" {
				if code != 0 {
					t.Errorf("exit %d: %+v", code, r.Findings)
				}
				return
			}
			f, ok := finding(r, tc.rule, p+":")
			if code != 1 || !ok || len(r.Findings) != 1 || !strings.HasSuffix(f.Where, " location /") {
				t.Fatalf("exit %d, want the one finding %s: %+v", code, tc.rule, r.Findings)
			}
			for _, w := range tc.want {
				if !strings.Contains(f.Setting, w) {
					t.Errorf("setting %q lacks %q", f.Setting, w)
				}
			}
		})
	}

	// Inherited from the server level.
	src := edit("proxy_connect_timeout 300ms;", "")
	src = strings.Replace(src, "listen 8080;", "listen 8080;\n        proxy_connect_timeout 2s;", 1)
	if code, r := budgetCheckJSON(t, nil, "--nginx", write("server.conf", src)); code != 1 || !strings.Contains(r.Findings[0].Setting, "proxy_connect_timeout 2s") {
		t.Errorf("a server-level connect timeout: exit %d, %+v", code, r.Findings)
	}
	// Without HTTP/1.1 to the upstream there is no keepalive to order.
	src = edit("proxy_http_version 1.1;", "")
	src = strings.Replace(src, "keepalive_timeout 60s;", "keepalive_timeout 5m;", 1)
	if code, r := budgetCheckJSON(t, nil, "--nginx", write("http10.conf", src)); code != 0 {
		t.Errorf("keepalive off (HTTP/1.0): exit %d, %+v", code, r.Findings)
	}

	for _, tc := range []struct{ name, src, want string }{
		{"a bad time", edit("proxy_read_timeout 1830s;", "proxy_read_timeout soon;"), `proxy_read_timeout "soon": want an nginx time such as 300ms, 60s or 30m`},
		{"no proxy_pass", "events {}\nhttp { server { listen 8080; } }\n", "no location passes requests on (proxy_pass)"},
		{"unreadable", "http { server {\n", "--nginx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := budgetCheck(t, nil, "--nginx", write("bad.conf", tc.src))
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want 2 and %q:\n%s", code, tc.want, out)
			}
		})
	}
}

// --compose reads the nginx configuration a service mounts over
// /etc/nginx/nginx.conf, relative to the compose file.
func TestBudgetCheckComposeReadsNginx(t *testing.T) {
	dir := t.TempDir()
	compose, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile("../../deploy/nginx/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "deploy/nginx"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(conf), "proxy_read_timeout 1830s;", "proxy_read_timeout 30s;", 1)
	for name, data := range map[string][]byte{"docker-compose.yml": compose, "deploy/nginx/nginx.conf": []byte(bad)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, r := budgetCheckJSON(t, nil, "--compose", filepath.Join(dir, "docker-compose.yml"))
	if _, ok := finding(r, budgetcheck.RuleProxyRead, filepath.Join(dir, "deploy/nginx/nginx.conf")); code != 1 || !ok || len(r.Findings) != 1 {
		t.Errorf("exit %d, want the nginx read timeout: %+v", code, r.Findings)
	}
	// The repository's own passes.
	if code, out := budgetCheck(t, nil, "--compose", "../../docker-compose.yml"); code != 0 {
		t.Errorf("docker-compose.yml: exit %d\n%s", code, out)
	}
}

func TestNginxTime(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"300ms": 300 * time.Millisecond, "60s": time.Minute, "60": time.Minute, "30m": 30 * time.Minute, "1h30m": 90 * time.Minute, "1d": 24 * time.Hour,
	} {
		if got, err := nginxTime(in); err != nil || got != want {
			t.Errorf("nginxTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "5x", "ms", "1.5s"} {
		if _, err := nginxTime(in); err == nil {
			t.Errorf("nginxTime(%q): no error", in)
		}
	}
}
