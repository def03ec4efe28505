package resilience

import (
	"context"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// deadlineSeer is a health service whose Check reports, on seen, the
// deadline its handler runs under.
type deadlineSeer struct {
	healthpb.UnimplementedHealthServer
	seen chan time.Duration // remaining at the handler; -1 for none
}

func (s deadlineSeer) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	rem, ok := deadline.Remaining(ctx)
	if !ok {
		rem = -1
	}
	s.seen <- rem
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// A direct gRPC call with a 60 s deadline, from a real client over a real
// connection, to a budgeted server: its handler runs under its class's
// maximum (10 s interactive, 2 min background), not 60 s or 30 min, and the
// clamp is counted by class. A naive server accepts whatever it is given.
func TestServerCapsTheDeadlineItAccepts(t *testing.T) {
	for _, tt := range []struct {
		name  string
		mode  mode.Mode
		class deadline.Class
		sent  time.Duration
		want  time.Duration // the deadline the handler runs under; 0: none
		// clamped is the class a clamp is counted under; "" for none.
		clamped string
	}{
		{"budgeted interactive", mode.Budgeted, deadline.Interactive, time.Minute, deadline.DefaultMaxBudget, "interactive"},
		{"budgeted background", mode.Budgeted, deadline.Background, time.Hour, deadline.DefaultBackgroundMaxBudget, "background"},
		{"budgeted batch within its maximum", mode.Budgeted, deadline.Batch, time.Minute, time.Minute, ""},
		// Naive detaches the handler from its caller's deadline altogether
		// (work for the trash) and caps nothing.
		{"naive", mode.Naive, deadline.Interactive, time.Minute, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := telemetry.New("catalog")
			if err != nil {
				t.Fatal(err)
			}
			live := mode.NewLive(mode.Settings{Mode: tt.mode, Mechanisms: tt.mode.Mechanisms(), Floor: 20 * time.Millisecond})
			srv := grpc.NewServer(grpc.UnaryInterceptor(ServerChain(ServerOptions{Service: "catalog", Settings: live, Metrics: m})))
			seer := deadlineSeer{seen: make(chan time.Duration, 1)}
			healthpb.RegisterHealthServer(srv, seer)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Stop()

			// The client carries its class as every Mercado client does.
			cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithUnaryInterceptor(deadline.UnaryClientInterceptor(deadline.ClientOptions{
					Policy: func(context.Context) deadline.Policy { return deadline.Policy{Blind: true} },
				})))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(deadline.WithClass(context.Background(), tt.class), tt.sent)
			defer cancel()
			if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
				t.Fatal(err)
			}
			got := <-seer.seen
			switch {
			case tt.want == 0 && got != -1:
				t.Errorf("handler ran under a %v deadline, want none", got)
			case tt.want > 0 && (got > tt.want || got < tt.want-5*time.Second):
				t.Errorf("handler ran under %v left of a %v deadline, want at most %v and within 5 s of it", got, tt.sent, tt.want)
			}

			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			body, _ := io.ReadAll(rec.Body)
			for _, c := range []string{"interactive", "background", "batch"} {
				want := "0"
				if c == tt.clamped {
					want = "1"
				}
				line := `mercado_deadline_clamps_total{class="` + c + `",service="catalog"} ` + want + "\n"
				if !strings.Contains(string(body), line) {
					t.Errorf("metrics lack %q", strings.TrimSpace(line))
				}
			}
		})
	}
}
