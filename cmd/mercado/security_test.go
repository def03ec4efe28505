package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// Neither the admin token nor the database password reaches the output of
// `mercado serve`, set the way deployments set them (the environment), at
// the most verbose log level: not at start-up, not when the database
// cannot be reached, not in the error the command exits with.
func TestServeLogsNoSecrets(t *testing.T) {
	const tok, password = "tok-1a2b3c4d5e6f", "pa55-w0rd-9876"
	secrets := map[string]string{
		"MERCADO_ADMIN_TOKEN":  tok,
		"MERCADO_DATABASE_URL": "postgres://mercado:" + password + "@127.0.0.1:1/mercado?sslmode=disable",
		"MERCADO_LOG_LEVEL":    "debug",
	}
	check := func(t *testing.T, what, text string) {
		t.Helper()
		for _, s := range []string{tok, password} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows %q:\n%s", what, s, text)
			}
		}
	}

	t.Run("a service that cannot reach its database", func(t *testing.T) {
		var logs syncBuffer
		err := run(context.Background(), []string{"serve", "catalog", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"},
			env(secrets), io.Discard, &logs)
		if err == nil || !strings.Contains(err.Error(), "database") {
			t.Fatalf("serve catalog with its database down = %v, want a database error", err)
		}
		var exit strings.Builder
		exitCode(err, &exit)
		check(t, "the logs", logs.String())
		check(t, "the exit message", exit.String())
	})

	t.Run("a service serving, changed through its admin API", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var logs syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"serve", "gateway", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--admin-peers", ""},
				env(secrets), io.Discard, &logs)
		}()
		var adminAddr string
		for deadline := time.Now().Add(10 * time.Second); adminAddr == ""; time.Sleep(10 * time.Millisecond) {
			if line, ok := logLine(logs.String(), "serving"); ok {
				adminAddr, _ = line["admin_addr"].(string)
			}
			if time.Now().After(deadline) {
				t.Fatalf("no serving line; logs:\n%s", logs.String())
			}
		}
		for _, auth := range []string{"Bearer " + tok, "Bearer " + tok + "-wrong"} {
			req, _ := http.NewRequest(http.MethodPut, "http://"+adminAddr+"/admin/mode", strings.NewReader(`{"mode":"naive"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", auth)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("serve did not stop")
		}
		if _, ok := logLine(logs.String(), "mode switched"); !ok {
			t.Fatalf("no mode switched line; logs:\n%s", logs.String())
		}
		check(t, "the logs", logs.String())
	})
}

// The image runs as a user other than root: the last USER of the
// Dockerfile's final stage names a non-zero uid and gid.
func TestDockerfileRunsAsNonRoot(t *testing.T) {
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var user string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0:
		case strings.EqualFold(fields[0], "FROM"):
			user = "" // a new stage starts as root
		case strings.EqualFold(fields[0], "USER") && len(fields) > 1:
			user = fields[1]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	uid, gid, _ := strings.Cut(user, ":")
	if uid == "" || uid == "root" || uid == "0" || gid == "root" || gid == "0" {
		t.Errorf("the final stage runs as %q; want a non-root USER", user)
	}
}
