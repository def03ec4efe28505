package deadline_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

func TestParseClass(t *testing.T) {
	for in, want := range map[string]deadline.Class{
		"": deadline.Interactive, "interactive": deadline.Interactive,
		"background": deadline.Background, "batch": deadline.Batch,
	} {
		if got, err := deadline.ParseClass(in); err != nil || got != want {
			t.Errorf("ParseClass(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"Batch", "bulk", "batch ", "interactive,batch"} {
		if _, err := deadline.ParseClass(bad); !errors.Is(err, deadline.ErrBadClass) {
			t.Errorf("ParseClass(%q) error = %v, want ErrBadClass", bad, err)
		}
	}
}

// Batch may hold half of a pool, background three quarters, interactive
// all of it; every class gets at least one slot.
func TestClassLimit(t *testing.T) {
	for _, tt := range []struct {
		capacity                       int
		batch, background, interactive int
	}{{200, 100, 150, 200}, {25, 13, 19, 25}, {8, 4, 6, 8}, {1, 1, 1, 1}} {
		got := [3]int{deadline.Batch.Limit(tt.capacity), deadline.Background.Limit(tt.capacity), deadline.Interactive.Limit(tt.capacity)}
		if want := [3]int{tt.batch, tt.background, tt.interactive}; got != want {
			t.Errorf("limits of %d slots (batch, background, interactive) = %v, want %v", tt.capacity, got, want)
		}
	}
}

// The edge gives each class its own default and cap, and carries the
// class in the request's context; with classes off, everything is
// interactive; a class that names none is a 400.
func TestEdgeClasses(t *testing.T) {
	for _, tt := range []struct {
		name, class, ms string
		classesOff      bool
		wantClass       deadline.Class
		wantBudget      time.Duration
		wantCode        int
	}{
		{"interactive by default", "", "", false, deadline.Interactive, deadline.DefaultBudget, http.StatusOK},
		{"background default", "background", "", false, deadline.Background, deadline.DefaultBackgroundBudget, http.StatusOK},
		{"batch capped at its max", "batch", "9999999999", false, deadline.Batch, deadline.DefaultBatchMaxBudget, http.StatusOK},
		{"batch with classes off is interactive", "batch", "9999999999", true, deadline.Interactive, deadline.DefaultMaxBudget, http.StatusOK},
		{"unknown class", "urgent", "", false, "", 0, http.StatusBadRequest},
		{"unknown class with classes off", "urgent", "", true, "", 0, http.StatusBadRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var gotClass deadline.Class
			var gotBudget time.Duration
			h := deadline.Edge(deadline.EdgeOptions{
				Classes: func(context.Context) bool { return !tt.classesOff },
			})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotClass = deadline.ClassOf(r.Context())
				gotBudget, _ = deadline.Remaining(r.Context())
			}))
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.class != "" {
				req.Header.Set(deadline.HeaderClass, tt.class)
			}
			if tt.ms != "" {
				req.Header.Set(deadline.HeaderDeadline, tt.ms)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantCode {
				t.Fatalf("status = %d, want %d (%s)", rec.Code, tt.wantCode, rec.Body)
			}
			if tt.wantCode != http.StatusOK {
				return
			}
			if gotClass != tt.wantClass {
				t.Errorf("class = %q, want %q", gotClass, tt.wantClass)
			}
			if gotBudget > tt.wantBudget || gotBudget < tt.wantBudget-time.Second {
				t.Errorf("budget = %v, want %v", gotBudget, tt.wantBudget)
			}
		})
	}
}

// A server reads the caller's class from the metadata into the request's
// context; a class that names none is InvalidArgument, before the handler.
func TestServerReadsTheClass(t *testing.T) {
	intercept := deadline.UnaryServerInterceptor(deadline.ServerOptions{})
	info := &grpc.UnaryServerInfo{FullMethod: "/test/Class"}
	for _, tt := range []struct {
		md   []string
		want deadline.Class
		code codes.Code
	}{
		{nil, deadline.Interactive, codes.OK},
		{[]string{"x-request-class", "batch"}, deadline.Batch, codes.OK},
		{[]string{"x-request-class", "background"}, deadline.Background, codes.OK},
		{[]string{"x-request-class", "bulk"}, "", codes.InvalidArgument},
	} {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(tt.md...))
		var got deadline.Class
		called := false
		_, err := intercept(ctx, nil, info, func(ctx context.Context, _ any) (any, error) {
			called, got = true, deadline.ClassOf(ctx)
			return nil, nil
		})
		if status.Code(err) != tt.code || (tt.code == codes.OK && got != tt.want) || called != (tt.code == codes.OK) {
			t.Errorf("metadata %v: class %q, handler called %v, code %v; want %q, %v", tt.md, got, called, status.Code(err), tt.want, tt.code)
		}
	}
}
