package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
)

// TestComposeNginx: nginx, the edge proxy, runs the repository's configuration,
// listens where it is published, passes to the gateway's port, waits for
// a healthy gateway, and is locked down like the services.
func TestComposeNginx(t *testing.T) {
	p := loadCompose(t)
	nx := service(t, p, "nginx")
	const cfgPath = "deploy/nginx/nginx.conf"
	mounted := false
	for _, v := range nx.Volumes {
		if v.Source == mustAbs(t, filepath.Join(root, cfgPath)) && v.Target == "/etc/nginx/nginx.conf" && v.ReadOnly {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("nginx does not mount %s read-only over /etc/nginx/nginx.conf: %v", cfgPath, nx.Volumes)
	}
	if d := nx.DependsOn["gateway"]; d.Condition != types.ServiceConditionHealthy {
		t.Errorf("nginx does not wait for a healthy gateway: %v", nx.DependsOn)
	}
	if !nx.ReadOnly || !slices.Contains(nx.CapDrop, "ALL") || !slices.Contains(nx.SecurityOpt, "no-new-privileges:true") || nx.User == "" || nx.User[0] == '0' {
		t.Errorf("not locked down: read_only=%t cap_drop=%v security_opt=%v user=%q", nx.ReadOnly, nx.CapDrop, nx.SecurityOpt, nx.User)
	}

	b, err := os.ReadFile(filepath.Join(root, cfgPath))
	if err != nil {
		t.Fatal(err)
	}
	gw := mercadoServices()["gateway"]
	if m := regexp.MustCompile(`(?m)^\s*server gateway:(\d+);`).FindSubmatch(b); m == nil || string(m[1]) != port(t, gw.Addr) {
		t.Errorf("%s: the upstream is not the gateway on its port %s", cfgPath, port(t, gw.Addr))
	}
	m := regexp.MustCompile(`(?m)^\s*listen (\d+);`).FindSubmatch(b)
	if m == nil || len(nx.Ports) != 1 || strconv.FormatUint(uint64(nx.Ports[0].Target), 10) != string(m[1]) {
		t.Errorf("%s listens on %q, nginx publishes %v", cfgPath, m, nx.Ports)
	}
	// nginx writes only where the read-only container lets it: /tmp.
	for _, m := range regexp.MustCompile(`(?m)^\s*(pid|\w+_temp_path) (\S+);`).FindAllSubmatch(b, -1) {
		if !regexp.MustCompile(`^/tmp/`).Match(m[2]) {
			t.Errorf("%s: %s %s is outside /tmp", cfgPath, m[1], m[2])
		}
	}
}
