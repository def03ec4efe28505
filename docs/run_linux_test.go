package docs_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/slowtest"
	"github.com/mercado-lab/mercado/lab/shop"
)

// How long a server may take to become ready, and to stop once asked (its
// drain timeout is 10 s).
const (
	readyWithin = 30 * time.Second
	stopWithin  = 20 * time.Second
)

// runBlocks runs the runnable blocks in document order, inside the
// network namespace; bin is the directory of the built binary.
func runBlocks(t *testing.T, blocks []runnable, bin string) {
	if bin == "" {
		t.Fatal(binEnv + " is not set")
	}
	if err := loopbackUp(); err != nil {
		t.Fatalf("the namespace's loopback: %v", err)
	}
	r := &runner{env: blockEnv(bin), servers: map[string]string{}, results: map[string]result{}}
	defer r.stopShop(t)
	for i, b := range blocks {
		if b.name != "" {
			r.servers[b.file+"\x00"+b.name] = commands(rewrite(b.text))[0]
		}
		next := runnable{}
		if i+1 < len(blocks) {
			next = blocks[i+1]
		}
		keepShop := b.shop != defaultShop && b.shop != "" && next.file == b.file && next.shop == b.shop
		t.Run(b.String(), func(t *testing.T) { r.run(t, b, keepShop) })
	}
}

// blockEnv is this process's environment with the built binary first on
// PATH, and without MERCADO_* settings: a block runs with the defaults the
// docs describe.
func blockEnv(bin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "MERCADO_"):
		case strings.HasPrefix(kv, "PATH="):
			env = append(env, "PATH="+bin+string(os.PathListSeparator)+strings.TrimPrefix(kv, "PATH="))
		default:
			env = append(env, kv)
		}
	}
	return env
}

type runner struct {
	env     []string
	servers map[string]string // file and server block name → its first command
	shop    *process          // the shop the blocks before left running
	results map[string]result // a script without a shop run already, by its text
}

type result struct {
	out  string
	exit int
	took time.Duration
}

func (r *runner) run(t *testing.T, b runnable, keepShop bool) {
	time.Sleep(b.after)
	if b.server {
		r.runServers(t, b)
		return
	}
	// Many blocks run a lab's load test; the slow tests of other packages
	// that measure load wait for the block, and it for them.
	slowtest.Exclusive(t)
	if b.shop != "" {
		r.startShop(t, b)
		if !keepShop {
			defer r.stopShop(t)
		}
	}
	script := rewrite(b.text)
	res, ran := r.results[script]
	if ran && b.shop == "" {
		t.Logf("the same commands ran already; checking their output (exit %d in %v)", res.exit, res.took.Round(time.Millisecond))
	} else {
		var err error
		if res, err = r.script(t, script, b.timeout); err != nil {
			t.Fatalf("%v\n%s", err, res.out)
		}
		if b.shop == "" {
			r.results[script] = res
		}
	}
	var failed []string
	if !b.exitOK(res.exit) {
		failed = append(failed, fmt.Sprintf("exit status %d, want %s", res.exit, b.wantExit()))
	}
	for _, re := range b.expect {
		if !re.MatchString(res.out) {
			failed = append(failed, fmt.Sprintf("no match for %s", strings.TrimPrefix(re.String(), "(?m)")))
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%s\n$ %s\n%s", strings.Join(failed, "; "), strings.TrimSpace(script), res.out)
	}
	t.Logf("exit %d in %v, %d expectations met", res.exit, res.took.Round(time.Millisecond), len(b.expect))
}

// script runs a block's commands with bash -e: the first failing command
// ends the block with its status, as CI needs; its output goes back.
func (r *runner) script(t *testing.T, script string, limit time.Duration) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = t.TempDir(), r.env
	// The block reads the files the docs ship (docs/budgets/*.yaml) by
	// the paths a reader uses from the repository's root.
	here, err := os.Getwd()
	if err != nil {
		return result{}, err
	}
	if err := os.Symlink(here, filepath.Join(cmd.Dir, "docs")); err != nil {
		return result{}, err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Run()
	res := result{out: out.String(), took: time.Since(start)}
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever it left in the background
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("still running after %v, the block's time limit", limit)
	case errors.As(err, &exit) && exit.Exited():
		res.exit = exit.ExitCode()
	case err != nil:
		return res, err
	}
	return res, nil
}

// startShop makes sure the shop block b names is running.
func (r *runner) startShop(t *testing.T, b runnable) {
	t.Helper()
	line := r.servers[b.file+"\x00"+b.shop]
	if b.shop == defaultShop {
		line = defaultShop
	}
	if r.shop != nil && r.shop.line == line && b.shop != defaultShop {
		return
	}
	r.stopShop(t)
	p, err := startProcess(line, r.env, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r.shop = p
	if err := p.waitReady(); err != nil {
		t.Fatalf("%v\n%s", err, p.output())
	}
}

// stopShop stops the shop left running, which must stop cleanly.
func (r *runner) stopShop(t *testing.T) {
	t.Helper()
	if r.shop == nil {
		return
	}
	p := r.shop
	r.shop = nil
	if err := p.stop(); err != nil {
		t.Errorf("%v\n%s", err, p.output())
	}
}

// runServers starts a server block's lines, one after the other or
// together, waits for each to be ready, and stops them.
func (r *runner) runServers(t *testing.T, b runnable) {
	lines := commands(rewrite(b.text))
	if !b.together {
		for _, line := range lines {
			r.serve(t, []string{line})
		}
		return
	}
	r.serve(t, lines)
}

func (r *runner) serve(t *testing.T, lines []string) {
	t.Helper()
	var procs []*process
	defer func() {
		for _, p := range slices.Backward(procs) { // the edge first, as in a real stop
			if err := p.stop(); err != nil {
				t.Errorf("%v\n%s", err, p.output())
			}
		}
	}()
	start := time.Now()
	for _, line := range lines {
		p, err := startProcess(line, r.env, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		if err := p.waitReady(); err != nil {
			t.Fatalf("%v\n%s", err, p.output())
		}
	}
	t.Logf("ready in %v: %s", time.Since(start).Round(time.Millisecond), strings.Join(lines, " & "))
}

// A process is a long-running server started from one documented line.
type process struct {
	line  string
	cmd   *exec.Cmd
	out   syncBuffer
	ports []string // the admin ports whose /readyz says it is ready
	done  chan struct{}
	err   error // once done
}

// startProcess starts one server line. Its admin ports come from the
// service it names: `serve all` serves every one.
func startProcess(line string, env []string, dir string) (*process, error) {
	ports, err := adminPorts(line)
	if err != nil {
		return nil, err
	}
	p := &process{line: line, ports: ports, done: make(chan struct{})}
	// bash replaces itself with a single command, so the signal goes to
	// the server itself.
	p.cmd = exec.Command("bash", "-c", line)
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", line, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

var servedName = regexp.MustCompile(`\bserve\s+(\w+)`)

// adminPorts are the default admin ports of what the line serves.
func adminPorts(line string) ([]string, error) {
	m := servedName.FindStringSubmatch(line)
	if m == nil {
		return nil, fmt.Errorf("%q: a server line runs `mercado serve <name>`", line)
	}
	defaults := shop.Defaults()
	names := []string{m[1]}
	if m[1] == "all" {
		names = slices.Sorted(maps.Keys(defaults))
	}
	var ports []string
	for _, name := range names {
		c, ok := defaults[name]
		if !ok {
			return nil, fmt.Errorf("%q: no service %q", line, name)
		}
		_, port, err := net.SplitHostPort(c.AdminAddr)
		if err != nil {
			return nil, fmt.Errorf("%s's admin address %q: %w", name, c.AdminAddr, err)
		}
		ports = append(ports, port)
	}
	return ports, nil
}

// waitReady waits until every admin port's /readyz answers 200.
func (p *process) waitReady() error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(readyWithin)
	for _, port := range p.ports {
		url := "http://127.0.0.1:" + port + "/readyz"
		for {
			resp, err := client.Get(url)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-p.done:
				return fmt.Errorf("%s: ended before it was ready (%v)", p.line, p.err)
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: %s not ready within %v", p.line, url, readyWithin)
			}
		}
	}
	return nil
}

// stop sends SIGTERM, as a reader's Ctrl-C or a container runtime would,
// and expects a clean exit.
func (p *process) stop() error {
	defer syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // anything it left behind
	select {
	case <-p.done:
		return fmt.Errorf("%s: ended before it was stopped (%v)", p.line, p.err)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("%s: SIGTERM: %w", p.line, err)
	}
	select {
	case <-p.done:
	case <-time.After(stopWithin):
		return fmt.Errorf("%s: still running %v after SIGTERM", p.line, stopWithin)
	}
	if p.err != nil {
		return fmt.Errorf("%s: stopped by SIGTERM with %v, want exit 0", p.line, p.err)
	}
	return nil
}

// output is the tail of what the process printed.
func (p *process) output() string {
	const tail = 4000
	s := p.out.String()
	if len(s) > tail {
		s = "…" + s[len(s)-tail:]
	}
	return s
}

// syncBuffer is a buffer a running process writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// flagValue is the value of one of the test binary's flags ("" if unset).
func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}
