package chaos_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary builds the mercado binary once per test run, without the race
// detector (the processes under test need not carry its cost), and
// returns its path.
var binary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mercado-chaos-")
	if err != nil {
		return "", err
	}
	binDir = dir
	path := filepath.Join(dir, "mercado")
	cmd := exec.Command("go", "build", "-o", path, "github.com/mercado-lab/mercado/cmd/mercado")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out.String())
	}
	return path, nil
})

// adminClient talks to the services' admin ports without keeping
// connections (and their goroutines) alive between calls.
var adminClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// binDir holds the built binary; TestMain removes it.
var binDir string

// freePort returns a loopback address free at the time of asking. Each
// service keeps its ports across restarts, so the others find it again.
// The port is drawn below Linux's ephemeral range (32768 and up), where
// the kernel picks the ports of the outgoing connections other tests open
// meanwhile: a port from ":0" was taken by one of them before the service
// bound it ("address already in use", in a go test ./... run).
func freePort(t *testing.T) string {
	t.Helper()
	for range 100 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(10_000+rand.IntN(22_000)))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no free port below the ephemeral range in 100 tries")
	return ""
}

// service is one of the shop's processes.
type service struct {
	name, addr, admin string
	args              []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

// cluster is the five services, each a process of its own.
type cluster struct {
	t     *testing.T
	bin   string
	dbURL string
	svcs  map[string]*service
	order []string // start order: leaves first
}

// newCluster lays out the five services on free loopback ports, all on
// the database at dbURL. extra adds flags per service.
func newCluster(t *testing.T, dbURL string, extra map[string][]string) *cluster {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, bin: bin, dbURL: dbURL, svcs: map[string]*service{},
		order: []string{"catalog", "payments", "shipping", "orders", "gateway"}}
	for _, name := range c.order {
		c.svcs[name] = &service{name: name, addr: freePort(t), admin: freePort(t)}
	}
	common := []string{
		"--db-max-conns", "8", "--drain-timeout", "3s", "--log-level", "warn",
		// Breakers close again after a second, not the lesson's 30: a
		// restarted service must get traffic back within the run.
		"--breaker-open", "1s",
	}
	for _, name := range c.order {
		s := c.svcs[name]
		s.args = append([]string{"serve", name, "--addr", s.addr, "--admin-addr", s.admin}, common...)
		switch name {
		case "orders":
			s.args = append(s.args, "--catalog-addr", c.svcs["catalog"].addr,
				"--payments-addr", c.svcs["payments"].addr, "--shipping-addr", c.svcs["shipping"].addr)
		case "gateway":
			s.args = append(s.args, "--orders-addr", c.svcs["orders"].addr, "--catalog-addr", c.svcs["catalog"].addr)
		}
		s.args = append(s.args, extra[name]...)
	}
	t.Cleanup(c.stopAll)
	return c
}

// start starts every service, leaves first, and waits until each is ready.
func (c *cluster) start() {
	c.t.Helper()
	for _, name := range c.order {
		c.startOne(name)
	}
}

// startOne starts a service's process and waits for its /readyz.
func (c *cluster) startOne(name string) {
	c.t.Helper()
	s := c.svcs[name]
	s.mu.Lock()
	cmd := exec.Command(c.bin, s.args...)
	cmd.Env = append(os.Environ(), "MERCADO_DATABASE_URL="+c.dbURL)
	s.log = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		c.t.Fatalf("starting %s: %v", name, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	done := s.done
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Unlock()
	if err := waitReady(s.admin, 30*time.Second, done); err != nil {
		c.t.Fatalf("%s: %v\n%s", name, err, s.output())
	}
}

func (s *service) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && s.cmd.ProcessState == nil {
		return "(still running)"
	}
	return s.log.String()
}

// kill sends SIGKILL: no drain, no deferred writes, as when a node dies.
func (c *cluster) kill(name string) {
	c.signal(name, syscall.SIGKILL)
}

// signal sends sig to a service and waits for its process to end.
func (c *cluster) signal(name string, sig syscall.Signal) {
	s := c.svcs[name]
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (c *cluster) stopAll() {
	for i := len(c.order) - 1; i >= 0; i-- {
		c.signal(c.order[i], syscall.SIGTERM)
	}
}

// waitReady polls a service's /readyz until it answers 200.
func waitReady(admin string, within time.Duration, exited <-chan struct{}) error {
	end := time.Now().Add(within)
	for {
		resp, err := adminClient.Get("http://" + admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before it was ready")
		default:
		}
		if time.Now().After(end) {
			return fmt.Errorf("not ready after %v: %v", within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// putFault sets one method's fault on a running service (admin API).
func (c *cluster) putFault(name, method, specJSON string) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPut,
		"http://"+c.svcs[name].admin+"/admin/faults/"+method, strings.NewReader(specJSON))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := adminClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("PUT fault %s/%s: %d", name, method, resp.StatusCode)
	}
	return nil
}

// clearFaults removes one method's fault.
func (c *cluster) clearFault(name, method string) error {
	req, err := http.NewRequest(http.MethodDelete, "http://"+c.svcs[name].admin+"/admin/faults/"+method, nil)
	if err != nil {
		return err
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
