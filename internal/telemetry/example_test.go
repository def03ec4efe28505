package telemetry_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/mercado-lab/mercado/internal/telemetry"
)

func Example() {
	m, err := telemetry.New("orders")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Shutdown(context.Background())

	// Two calls to payments were not made: its breaker was open.
	ctx := context.Background()
	m.Skipped(ctx, telemetry.ReasonBreakerOpen)
	m.Skipped(ctx, telemetry.ReasonBreakerOpen)

	// What Prometheus sees on the admin port's /metrics: every reason,
	// at zero until its first skip, so rate() works from the start.
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.Lines(rec.Body.String()) {
		if strings.Contains(line, "mercado_skipped_total") {
			fmt.Print(line)
		}
	}
	// Output:
	// # HELP mercado_skipped_total Calls or requests not served, by reason.
	// # TYPE mercado_skipped_total counter
	// mercado_skipped_total{reason="below_floor_on_arrival",service="orders"} 0
	// mercado_skipped_total{reason="breaker_open",service="orders"} 2
	// mercado_skipped_total{reason="bulkhead_full",service="orders"} 0
	// mercado_skipped_total{reason="expired_at_dequeue",service="orders"} 0
	// mercado_skipped_total{reason="expired_on_arrival",service="orders"} 0
	// mercado_skipped_total{reason="insufficient_budget",service="orders"} 0
}
