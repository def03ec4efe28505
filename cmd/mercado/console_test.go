package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestLabConsole runs mercado lab console: it prints the console's URL on
// loopback, serves the page there with the shop behind it, and stops
// cleanly, with an event stream still open, when told to (SIGINT is the
// end of run's context).
func TestLabConsole(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"lab", "console", "--ephemeral-ports"}, env(nil), &out, io.Discard) }()
	urlLine := regexp.MustCompile(`live console: (http://127\.0\.0\.1:\d+/console/)`)
	var base string
	for end := time.Now().Add(20 * time.Second); base == ""; time.Sleep(20 * time.Millisecond) {
		if m := urlLine.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
		if time.Now().After(end) {
			t.Fatalf("no console URL printed; output:\n%s", out.String())
		}
	}
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Mercado live console") {
		t.Fatalf("GET %s = %d, want the console's page", base, resp.StatusCode)
	}
	// An open event stream must not hold the stop up.
	events, err := http.Get(base + "events")
	if err != nil {
		t.Fatal(err)
	}
	defer events.Body.Close()
	if line, err := bufio.NewReader(events.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "retry:") {
		t.Fatalf("the event stream began %q (%v)", line, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("lab console returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("lab console did not stop within 20 s of its context ending")
	}
}
