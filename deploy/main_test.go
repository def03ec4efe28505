// Package deploy_test checks Mercado's deployment files for one machine
// against the code they deploy: docker-compose.yml (read with
// compose-go, as Docker Compose reads it), .env, the Prometheus
// configuration and the Grafana provisioning and dashboards. It holds no
// code, only these tests.
package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/mercado-lab/mercado/internal/flagenv"
)

// The repository's root, seen from this folder.
const root = ".."

// binDir holds the mercado binary the tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mercado-deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var build struct {
	once sync.Once
	path string
	err  error
}

// mercadoBinary builds cmd/mercado once: the command the containers run,
// so that what it reads is asked of it, not of a list kept by hand.
func mercadoBinary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		out := filepath.Join(binDir, "mercado")
		cmd := exec.Command(goTool, "build", "-o", out, "./cmd/mercado")
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/mercado: %v\n%s", err, msg)
			return
		}
		build.path = out
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// flagLine is a flag in a command's --help (flag.PrintDefaults).
var flagLine = regexp.MustCompile(`(?m)^  -([a-z0-9][a-z0-9-]*)`)

// envNames returns the environment variables the command `mercado args...`
// reads: one per flag in its --help, named by flagenv.EnvName
// (--some-name is MERCADO_SOME_NAME).
func envNames(t *testing.T, args ...string) map[string]bool {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(mercadoBinary(t), append(args, "--help")...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = []string{} // the help must not depend on this shell
	if err := cmd.Run(); err != nil {
		t.Fatalf("mercado %s --help: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	names := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(stdout.String()+stderr.String(), -1) {
		names[flagenv.EnvName(m[1])] = true
	}
	if len(names) == 0 {
		t.Fatalf("mercado %s --help lists no flags:\n%s", strings.Join(args, " "), stderr.String())
	}
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
