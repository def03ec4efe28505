package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

const healthcheckUsage = `Usage: mercado healthcheck URL

Asks URL (a service's admin /readyz or /healthz) whether the service is
up: exits 0 on HTTP 200 and 1 on anything else, including no answer
within 2 s. It is the container health check: Mercado's image is built
FROM scratch, with no shell and no curl, e.g.

  ["CMD", "/mercado", "healthcheck", "http://localhost:9081/readyz"]
`

// healthcheckTimeout bounds the whole check: a health probe that hangs
// is a failed probe.
const healthcheckTimeout = 2 * time.Second

func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		fmt.Fprint(stderr, healthcheckUsage)
		if len(args) == 1 {
			return nil
		}
		return usagef("healthcheck: give one URL")
	}
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", args[0], resp.Status)
	}
	fmt.Fprintln(stdout, "ok:", args[0])
	return nil
}
