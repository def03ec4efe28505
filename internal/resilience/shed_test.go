package resilience

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// A full pool sheds by class: as it fills, batch is refused first (at half
// the pool), then background (at three quarters), and interactive work
// gets every slot. Each refusal is counted under its class.
func TestPoolShedsBatchThenBackgroundThenInteractive(t *testing.T) {
	live := mode.NewLive(mode.Settings{Mode: mode.Budgeted, Mechanisms: mode.Budgeted.Mechanisms()})
	in := newTestInbound(t, live, InboundOptions{Service: "catalog", Workers: 8, MaxWait: 0})
	intercept := in.UnaryServerInterceptor()

	release := make(chan struct{})
	defer close(release)
	// try sends one request of class c; held reports it took a worker and
	// now holds it until the test ends.
	try := func(c deadline.Class) codes.Code {
		ctx := deadline.WithClass(context.Background(), c)
		held := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, err := intercept(ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/test/Work"}, func(ctx context.Context, _ any) (any, error) {
				close(held)
				<-release
				return nil, nil
			})
			done <- err
		}()
		select {
		case <-held:
			return codes.OK
		case err := <-done:
			return status.Code(err)
		}
	}

	steps := []struct {
		inUse                          int
		batch, background, interactive codes.Code
	}{
		// 0 to 3 of 8 in use: every class is admitted (the test fills with
		// interactive work after checking).
		{0, codes.OK, codes.OK, codes.OK},
		// batch's 4 are in use: batch is refused, the others go on.
		{4, codes.ResourceExhausted, codes.OK, codes.OK},
		// background's 6: background is refused too.
		{6, codes.ResourceExhausted, codes.ResourceExhausted, codes.OK},
		// All 8: interactive is refused last.
		{8, codes.ResourceExhausted, codes.ResourceExhausted, codes.ResourceExhausted},
	}
	inUse := 0
	for _, st := range steps {
		// Fill with interactive work to st.inUse.
		for inUse < st.inUse {
			if got := try(deadline.Interactive); got != codes.OK {
				t.Fatalf("filling to %d: interactive request %d got %v", st.inUse, inUse+1, got)
			}
			inUse++
		}
		for _, c := range []struct {
			class deadline.Class
			want  codes.Code
		}{{deadline.Batch, st.batch}, {deadline.Background, st.background}, {deadline.Interactive, st.interactive}} {
			got := try(c.class)
			if got != c.want {
				t.Errorf("%d of 8 in use: %s request got %v, want %v", inUse, c.class, got, c.want)
			}
			if got == codes.OK {
				inUse++ // it holds its slot now
			}
		}
	}

	// The refusals, by class: batch at 4, 6 and 8 in use (and the first
	// step's admitted requests took slots: batch was refused 3 times,
	// background twice, interactive once).
	rec := httptest.NewRecorder()
	in.o.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for class, want := range map[string]string{"batch": "3", "background": "2", "interactive": "1"} {
		line := `mercado_pool_rejections_total{class="` + class + `",pool="workers",service="test"} ` + want
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
}

// With classes off (naive's one class), batch work is interactive: it may
// take the whole pool.
func TestPoolWithClassesOffIsOneQueue(t *testing.T) {
	m := mode.Budgeted.Mechanisms()
	m.Classes = false
	live := mode.NewLive(mode.Settings{Mode: mode.Budgeted, Mechanisms: m})
	in := newTestInbound(t, live, InboundOptions{Service: "catalog", Workers: 4, MaxWait: 0})
	ctx := deadline.WithClass(context.Background(), deadline.Batch)
	var pools []interface{ Release() }
	for i := range 4 {
		p, rej := in.admit(ctx, "")
		if rej != nil {
			t.Fatalf("batch request %d of 4 with classes off: %v", i+1, rej)
		}
		pools = append(pools, p)
	}
	if _, rej := in.admit(ctx, ""); rej == nil || rej.Code != codes.ResourceExhausted {
		t.Errorf("fifth request on a full pool of 4: %v, want ResourceExhausted", rej)
	}
	for _, p := range pools {
		p.Release()
	}
}
