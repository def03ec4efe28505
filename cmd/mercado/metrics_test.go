package main

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/telemetry"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
	ordersv1 "github.com/mercado-lab/mercado/proto/orders/v1"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
	shippingv1 "github.com/mercado-lab/mercado/proto/shipping/v1"
)

// served is a service started with `mercado serve <name>` on free ports.
type served struct{ addr, adminAddr string }

// serveOnFreePorts runs `mercado serve name` until the test ends.
func serveOnFreePorts(t *testing.T, name string) served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", name, "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, env(nil), io.Discard, &logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Errorf("serve %s did not stop", name)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if line, ok := logLine(logs.String(), "serving"); ok {
			addr, _ := line["addr"].(string)
			admin, _ := line["admin_addr"].(string)
			return served{addr, admin}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve %s: no serving log line; logs:\n%s", name, logs.String())
		}
	}
}

// scrapeMetrics reads a service's /metrics.
func scrapeMetrics(t *testing.T, adminAddr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// hasZero reports whether family has a counter series at 0 whose labels
// include want.
func hasZero(families map[string]*dto.MetricFamily, family string, want map[string]string) bool {
next:
	for _, m := range families[family].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m.GetCounter() != nil && m.GetCounter().GetValue() == 0
	}
	return false
}

// TestFreshServiceExportsCountersAtZero scrapes each service's /metrics
// before any request: every counter with known label values is there, at
// zero, so that a dashboard's rate() and an absence alert work from the
// start.
func TestFreshServiceExportsCountersAtZero(t *testing.T) {
	methods := func(d grpc.ServiceDesc) []string {
		var out []string
		for _, m := range d.Methods {
			out = append(out, "/"+d.ServiceName+"/"+m.MethodName)
		}
		return out
	}
	for _, tc := range []struct {
		service string
		methods []string
		deps    []string
	}{
		{"gateway", []string{"http"}, []string{"orders", "catalog"}},
		{"orders", methods(ordersv1.OrdersService_ServiceDesc), []string{"catalog", "payments", "shipping"}},
		{"catalog", methods(catalogv1.CatalogService_ServiceDesc), nil},
		{"payments", methods(paymentsv1.PaymentsService_ServiceDesc), nil},
		{"shipping", methods(shippingv1.ShippingService_ServiceDesc), nil},
	} {
		t.Run(tc.service, func(t *testing.T) {
			t.Parallel()
			families := scrapeMetrics(t, serveOnFreePorts(t, tc.service).adminAddr)
			type series struct {
				family string
				labels map[string]string
			}
			var want []series
			for _, r := range []string{telemetry.ReasonInsufficientBudget, telemetry.ReasonBreakerOpen, telemetry.ReasonBulkheadFull,
				telemetry.ReasonExpiredOnArrival, telemetry.ReasonBelowFloorOnArrival, telemetry.ReasonExpiredAtDequeue} {
				want = append(want, series{telemetry.NameSkipped, map[string]string{"reason": r}})
			}
			want = append(want, series{telemetry.NameModeChanges, map[string]string{"mode": "naive"}},
				series{telemetry.NameModeChanges, map[string]string{"mode": "budgeted"}})
			for _, m := range tc.methods {
				for _, f := range []string{telemetry.NameRequests, telemetry.NameLateCompletions, telemetry.NameLateWork} {
					want = append(want, series{f, map[string]string{"method": m}})
				}
			}
			for _, d := range tc.deps {
				want = append(want, series{telemetry.NameAttempts, map[string]string{"dep": d}},
					series{telemetry.NameRetries, map[string]string{"dep": d}},
					series{telemetry.NameBreakerTransitions, map[string]string{"dep": d, "from": "closed", "to": "open"}},
					series{telemetry.NameBreakerTransitions, map[string]string{"dep": d, "from": "half_open", "to": "closed"}})
			}
			// Every pool the service reports has its rejections counter.
			pools := families[telemetry.NamePoolCapacity].GetMetric()
			if len(pools) == 0 {
				t.Errorf("no pool on a fresh /metrics")
			}
			for _, p := range pools {
				for _, l := range p.GetLabel() {
					if l.GetName() == "pool" {
						want = append(want, series{telemetry.NamePoolRejections, map[string]string{"pool": l.GetValue()}})
					}
				}
			}
			for _, s := range want {
				if !hasZero(families, s.family, s.labels) {
					t.Errorf("no %s%v at 0 on a fresh /metrics", s.family, s.labels)
				}
			}
		})
	}
}

// TestHealthAnswersForEachServiceName: the gRPC health service answers
// SERVING for the service's own proto name as well as for the whole server
// (""), and NOT_FOUND for a name it does not serve.
func TestHealthAnswersForEachServiceName(t *testing.T) {
	for _, tc := range []struct{ service, name string }{
		{"orders", ordersv1.OrdersService_ServiceDesc.ServiceName},
		{"catalog", catalogv1.CatalogService_ServiceDesc.ServiceName},
		{"payments", paymentsv1.PaymentsService_ServiceDesc.ServiceName},
		{"shipping", shippingv1.ShippingService_ServiceDesc.ServiceName},
	} {
		t.Run(tc.service, func(t *testing.T) {
			t.Parallel()
			s := serveOnFreePorts(t, tc.service)
			cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			hc := healthpb.NewHealthClient(cc)
			for _, name := range []string{"", tc.name} {
				resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
				if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
					t.Errorf("Check(%q) = %v, %v; want SERVING", name, resp.GetStatus(), err)
				}
			}
			other := "mercado.nope.v1.NopeService"
			if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: other}); status.Code(err) != codes.NotFound {
				t.Errorf("Check(%q) = %v; want NotFound", other, err)
			}
		})
	}
}
