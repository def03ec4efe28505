// Package docs_test runs the commands that README.md, docs/*.md and the
// course (docs/course/*.md) show, and checks that they do what the text
// says they do.
//
// Every ```sh block carries a marker on the line right before its fence
// (blocks_test.go explains the convention): either it is runnable, with
// what to expect of it, or it is not, with the reason. A block of commands
// without a marker fails the test, so a new command in the docs is either
// run in CI or says why it cannot be.
//
// The documented commands use the shop's fixed ports (localhost:8080 and
// the rest), and other tests, or a reader's own shop, may hold those ports
// on the same machine. So the runnable blocks run in a network namespace
// of their own (netns_linux_test.go): there, the documented ports are
// always free, and the commands run as written (run_linux_test.go),
// against the binary built once (`go run ./cmd/mercado` becomes
// `mercado`). Network namespaces are Linux's: elsewhere only the markers
// are checked.
package docs_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/internal/slowtest"
)

// root is the repository root, seen from this package's directory.
const root = ".."

// allBlocks reads every fenced block of README.md, docs/*.md and
// docs/course/*.md.
func allBlocks(t *testing.T) []block {
	t.Helper()
	files, err := docFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var all []block
	for _, rel := range files {
		bs, err := readBlocks(filepath.Join(root, rel), rel)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, bs...)
	}
	return all
}

// runnables checks every block's marker and returns the runnable blocks in
// document order, with one error per block that is unmarked or marked
// wrongly.
func runnables(blocks []block) ([]runnable, []string, []error) {
	var (
		run      []runnable
		notRun   []string
		problems []error
		servers  = map[string]bool{}
	)
	for _, b := range blocks {
		s, marked, err := parseMark(b.mark)
		shell := shellLangs[b.lang]
		switch {
		case !shell && b.lang == "" && looksLikeCommands.MatchString(strings.TrimSpace(b.text)):
			problems = append(problems, fmt.Errorf("%s: a block of commands is fenced as ```sh (and marked)", b))
		case !shell && marked:
			problems = append(problems, fmt.Errorf("%s: a marker goes before a ```sh block, not ```%s", b, b.lang))
		case !shell:
		case err != nil:
			problems = append(problems, fmt.Errorf("%s: %s: %w", b, b.mark, err))
		case !marked:
			problems = append(problems, fmt.Errorf("%s: unmarked ```%s block: put <!-- runnable -->, or <!-- not runnable: REASON -->, on the line before its fence", b, b.lang))
		case !s.runnable:
			notRun = append(notRun, fmt.Sprintf("%s: %s", b, s.reason))
		default:
			if s.name != "" {
				servers[b.file+"\x00"+s.name] = true
			}
			if s.shop != "" && s.shop != defaultShop && !servers[b.file+"\x00"+s.shop] {
				problems = append(problems, fmt.Errorf("%s: shop=%s names no server block above it in %s", b, s.shop, b.file))
			}
			run = append(run, runnable{b, s})
		}
	}
	return run, notRun, problems
}

func TestEveryShellBlockIsMarked(t *testing.T) {
	run, notRun, problems := runnables(allBlocks(t))
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d runnable blocks, %d not runnable:", len(run), len(notRun))
	for _, r := range notRun {
		t.Log("  " + r)
	}
}

// namespaceEnv is set in the copy of this test that runs inside its own
// network namespace; binEnv names the directory of the built binary.
const (
	namespaceEnv = "MERCADO_DOCSTEST_NAMESPACE"
	binEnv       = "MERCADO_DOCSTEST_BIN"
)

func TestDocumentedCommands(t *testing.T) {
	slowtest.Require(t, "the documented commands take about five minutes")
	run, _, problems := runnables(allBlocks(t))
	if len(problems) > 0 {
		t.Fatalf("the docs' markers are wrong (see TestEveryShellBlockIsMarked): %v", errors.Join(problems...))
	}
	if os.Getenv(namespaceEnv) != "" {
		runBlocks(t, run, os.Getenv(binEnv))
		return
	}
	inCI := os.Getenv("CI") != ""
	bin := buildMercado(t)
	err := rerunInNamespace(t, bin)
	switch {
	case errors.Is(err, errNoNamespace) && inCI:
		t.Fatalf("CI must run the documented commands, but %v", err)
	case errors.Is(err, errNoNamespace):
		t.Skipf("the documented commands were not run: %v", err)
	case err != nil:
		t.Fatal(err)
	}
}

// buildMercado builds the binary once, into a directory of its own, and
// returns that directory.
func buildMercado(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	dir := t.TempDir()
	cmd := exec.Command(goTool, "build", "-o", filepath.Join(dir, "mercado"), "./cmd/mercado")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mercado: %v\n%s", err, out)
	}
	return dir
}
