package resilience

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
)

// The caps mechanism decides whether a call's own cap bounds it: each
// combination on the way from fragile to budgeted gives the call the
// timeout its switches say.
func TestCallTimeoutFollowsCaps(t *testing.T) {
	const cap, margin, budget = 300 * time.Millisecond, 10 * time.Millisecond, 2 * time.Second
	m, err := telemetry.New("test")
	if err != nil {
		t.Fatal(err)
	}
	with := func(preset mode.Mode, overrides string) mode.Settings {
		var o mode.Overrides
		if err := o.Set(overrides); err != nil {
			t.Fatal(err)
		}
		return mode.Settings{Mode: preset, Mechanisms: preset.Mechanisms().Apply(o), Margin: margin, Floor: 20 * time.Millisecond}
	}
	for _, tc := range []struct {
		name     string
		s        mode.Settings
		deadline bool          // the request carries the budget
		want     time.Duration // the call's timeout; zero: none at all
	}{
		{"fragile: no timeout", with(mode.Fragile, ""), false, 0},
		{"fragile with caps: the cap", with(mode.Fragile, "caps=on"), false, cap},
		{"fragile with clip and no caps: the budget less the margin", with(mode.Fragile, "clip_to_budget=on"), true, budget - margin},
		{"fragile with clip and no caps, no budget: none", with(mode.Fragile, "clip_to_budget=on"), false, 0},
		{"naive: the cap", with(mode.Naive, ""), true, cap},
		{"budgeted: the smaller of cap and budget", with(mode.Budgeted, ""), true, cap},
		{"budgeted without caps: the budget less the margin", with(mode.Budgeted, "caps=off"), true, budget - margin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := mode.NewLive(tc.s)
			call := ClientChain(NewOutbound(OutboundOptions{Name: "shipping", Cap: cap, Settings: live, Metrics: m}))
			var got time.Duration
			invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
				if dl, ok := ctx.Deadline(); ok {
					got = time.Until(dl)
				}
				return nil
			}
			ctx := context.Background()
			if tc.deadline {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, budget)
				defer cancel()
			}
			if err := call(ctx, "/mercado.shipping.v1.ShippingService/CreateShipment", nil, nil, nil, invoker); err != nil {
				t.Fatal(err)
			}
			// The call is decided within milliseconds of the budget's start;
			// a busy machine is given a generous 200 ms.
			if tc.want == 0 && got != 0 {
				t.Errorf("the call has a timeout of %v, want none", got)
			}
			if tc.want > 0 && (got > tc.want || got < tc.want-200*time.Millisecond) {
				t.Errorf("the call's timeout = %v, want about %v", got, tc.want)
			}
		})
	}
}

// With caps off, the edge's HTTP server keeps net/http's defaults: an
// answer written after the server's write timeout still reaches the
// client. With caps on, the write timeout cuts it.
func TestEdgeWriteTimeoutFollowsCaps(t *testing.T) {
	const writeTimeout, work = 100 * time.Millisecond, 400 * time.Millisecond
	for _, tc := range []struct {
		preset   mode.Mode
		answered bool
	}{
		{mode.Fragile, true},
		{mode.Naive, false},
	} {
		t.Run(string(tc.preset), func(t *testing.T) {
			live := mode.NewLive(mode.Settings{Mode: tc.preset, Mechanisms: tc.preset.Mechanisms()})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(work)
				_, _ = io.WriteString(w, "done")
			})
			srv := httptest.NewUnstartedServer(snapshotHTTP(live)(liftServerTimeouts(live)(h)))
			srv.Config.WriteTimeout = writeTimeout
			srv.Start()
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			answered := err == nil
			if answered {
				body, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				answered = rerr == nil && string(body) == "done"
			}
			if answered != tc.answered {
				t.Errorf("%s: answer after the write timeout reached the client: %v (err %v), want %v", tc.preset, answered, err, tc.answered)
			}
		})
	}
}
