package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestVersionAndHelp(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, env(nil), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "mercado ") {
		t.Errorf("version printed %q", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"--help"}, env(nil), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "mercado serve") {
		t.Errorf("help printed %q", out.String())
	}
}

// TestBadInputExitsTwo: every mistake in the command line or the
// configuration is one clear message and exit status 2, never a panic.
func TestBadInputExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no command", nil, nil, "no command"},
		{"unknown command", []string{"fly"}, nil, `unknown command "fly"`},
		{"serve without a name", []string{"serve"}, nil, "name a service"},
		{"unknown service", []string{"serve", "inventory"}, nil, `unknown service "inventory"`},
		{"bad mode flag", []string{"serve", "catalog", "--mode", "reckless"}, nil, `unknown mode "reckless"`},
		{"bad mode env", []string{"serve", "orders"}, map[string]string{"MERCADO_MODE": "reckless"}, "MERCADO_MODE"},
		{"negative margin", []string{"serve", "payments", "--margin", "-1s"}, nil, "margin"},
		{"same ports", []string{"serve", "shipping", "--addr", ":7000", "--admin-addr", ":7000"}, nil, "admin never shares"},
		{"bad fault", []string{"serve", "catalog", "--fault", "ReserveStock:latency=fast"}, nil, "latency"},
		{"budget over max", []string{"serve", "gateway", "--budget", "20s"}, nil, "max-budget"},
		{"zero cap", []string{"serve", "orders", "--payments-cap", "0s"}, nil, "payments-cap"},
		{"all with a bad floor", []string{"serve", "all", "--floor", "2m"}, nil, "floor"},
		{"stray argument", []string{"serve", "catalog", "extra"}, nil, "unexpected argument"},
		{"unknown lab", []string{"lab", "lesson99"}, nil, `unknown lab "lesson99"`},
		{"bad lab flag", []string{"lab", "lesson7", "--deadline", "0s"}, nil, "deadline"},
		{"capstone carrier on the wrong service", []string{"lab", "capstone", "--carrier", "CreateCharge:hang=1s"}, nil, "carrier"},
		{"capstone margin past the deadline", []string{"lab", "capstone", "--margin", "5s"}, nil, "margin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tc.args, env(tc.env), io.Discard, &stderr)
			if err == nil {
				t.Fatal("accepted")
			}
			if code := exitCode(err, &stderr); code != 2 {
				t.Errorf("exit code %d, want 2 (err: %v)", code, err)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tc.want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe to write from the server's goroutines
// while the test reads it.
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

// logLine finds the first JSON log line whose msg is msg.
func logLine(logs, msg string) (map[string]any, bool) {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == msg {
			return line, true
		}
	}
	return nil, false
}

// TestServeStopsGracefully runs `mercado serve catalog` on free ports,
// checks its admin listener, then sends the equivalent of SIGTERM.
func TestServeStopsGracefully(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "catalog", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"},
			env(map[string]string{"MERCADO_MODE": "naive"}), io.Discard, &logs)
	}()

	var serving map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; {
		var ok bool
		if serving, ok = logLine(logs.String(), "serving"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no serving log line; logs:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	admin, _ := serving["admin_addr"].(string)
	resp, err := http.Get("http://" + admin + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz = %d", resp.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v after shutdown, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	if _, ok := logLine(logs.String(), "stopped"); !ok {
		t.Errorf("no stopped log line; logs:\n%s", logs.String())
	}
}

func TestServePortInUseIsNotAUsageError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	first := make(chan error, 1)
	go func() {
		first <- run(ctx, []string{"serve", "shipping", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, env(nil), io.Discard, &logs)
	}()
	var serving map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; {
		var ok bool
		if serving, ok = logLine(logs.String(), "serving"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("first server did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	taken, _ := serving["addr"].(string)
	err := run(context.Background(), []string{"serve", "payments", "--addr", taken, "--admin-addr", "127.0.0.1:0"}, env(nil), io.Discard, io.Discard)
	if err == nil || errors.As(err, new(usageError)) {
		t.Errorf("second server on a taken port: %v, want a runtime error (exit 1)", err)
	}
	if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), "--ephemeral-ports") {
		t.Errorf("second server on a taken port: %v, want it to say the port is taken and name --ephemeral-ports", err)
	}
	cancel()
	<-first
}
