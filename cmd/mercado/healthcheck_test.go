package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHealthcheck: the container health check passes on 200 only, and
// gives up on a service that does not answer.
func TestHealthcheck(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ready") })
	mux.HandleFunc("/draining", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(release)

	for _, tc := range []struct {
		name, path string
		ok         bool
	}{
		{"ready", "/readyz", true},
		{"not ready", "/draining", false},
		{"no such page", "/nope", false},
		{"hangs", "/hang", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := run(context.Background(), []string{"healthcheck", srv.URL + tc.path}, env(nil), io.Discard, io.Discard)
			if (err == nil) != tc.ok {
				t.Fatalf("healthcheck %s: err = %v, want ok = %v", tc.path, err, tc.ok)
			}
			if err != nil && exitCode(err, io.Discard) != 1 {
				t.Errorf("exit status %d, want 1", exitCode(err, io.Discard))
			}
			if took := time.Since(start); took > healthcheckTimeout+time.Second {
				t.Errorf("took %v, more than the %v timeout", took, healthcheckTimeout)
			}
		})
	}

	t.Run("no URL", func(t *testing.T) {
		err := run(context.Background(), []string{"healthcheck"}, env(nil), io.Discard, io.Discard)
		if !errors.As(err, new(usageError)) {
			t.Errorf("err = %v, want a usage error", err)
		}
	})
}
