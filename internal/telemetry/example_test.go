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

	// What Prometheus sees on the admin port's /metrics.
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
	// mercado_skipped_total{reason="breaker_open",service="orders"} 2
}
