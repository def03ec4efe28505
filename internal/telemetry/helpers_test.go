package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// newMetrics returns a Metrics for service, shut down when the test ends.
func newMetrics(t testing.TB, service string) *Metrics {
	t.Helper()
	m, err := New(service)
	if err != nil {
		t.Fatalf("New(%q): %v", service, err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return m
}

// scrape GETs m's handler as Prometheus would and parses the text format.
func scrape(t testing.TB, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := tryScrape(m)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// tryScrape is scrape for goroutines other than the test's own, which
// must not call t.Fatal.
func tryScrape(m *Metrics) (map[string]*dto.MetricFamily, error) {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: status %d: %s", rec.Code, rec.Body)
	}
	if got, want := expfmt.ResponseFormat(rec.Result().Header).FormatType(), expfmt.TypeTextPlain; got != want {
		return nil, fmt.Errorf("GET /metrics: format %v; want %v (Content-Type %q)", got, want, rec.Header().Get("Content-Type"))
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return families, nil
}

// series returns the metric of family name whose labels include all of
// want, or nil.
func series(families map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	mf := families[name]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.GetMetric() {
		got := labels(m)
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

func labels(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// value is a counter's or gauge's value, or a histogram's sample count.
func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return -1
}
