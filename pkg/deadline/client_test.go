package deadline_test

import (
	"context"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

type otherKey struct{}

func TestClientDeadline(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	later := at.Add(time.Second)
	tests := []struct {
		name   string
		ctx    context.Context
		want   time.Time
		wantOK bool
	}{
		{name: "absent", ctx: context.Background()},
		{name: "recorded", ctx: deadline.WithClientDeadline(context.Background(), at), want: at, wantOK: true},
		{
			name:   "innermost wins",
			ctx:    deadline.WithClientDeadline(deadline.WithClientDeadline(context.Background(), at), later),
			want:   later,
			wantOK: true,
		},
		{
			name:   "survives derived contexts",
			ctx:    context.WithValue(deadline.WithClientDeadline(context.Background(), at), otherKey{}, 1),
			want:   at,
			wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := deadline.ClientDeadline(tt.ctx)
			if !got.Equal(tt.want) || ok != tt.wantOK {
				t.Errorf("ClientDeadline() = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// The client deadline is passive: it must not cancel anything.
func TestWithClientDeadlineCancelsNothing(t *testing.T) {
	ctx := deadline.WithClientDeadline(context.Background(), time.Now().Add(-time.Hour))
	if _, ok := ctx.Deadline(); ok {
		t.Error("WithClientDeadline set a context deadline")
	}
	if ctx.Err() != nil {
		t.Errorf("ctx.Err() = %v; want nil", ctx.Err())
	}
}
