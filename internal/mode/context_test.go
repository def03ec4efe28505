package mode_test

import (
	"context"
	"testing"

	"github.com/mercado-lab/mercado/internal/mode"
)

// A request's snapshot stays what it was when the request arrived, whatever
// is switched while it runs; work that belongs to no request reads the
// settings in force.
func TestSnapshotOutlivesASwitch(t *testing.T) {
	naive := mode.Settings{Mode: mode.Naive, Mechanisms: mode.Naive.Mechanisms()}
	budgeted := mode.Settings{Mode: mode.Budgeted, Mechanisms: mode.Budgeted.Mechanisms()}
	l := mode.NewLive(budgeted)

	if _, ok := mode.From(context.Background()); ok {
		t.Fatal("From(Background) reports a snapshot")
	}
	ctx, s := l.Snapshot(context.Background())
	if s != budgeted {
		t.Fatalf("Snapshot = %+v, want %+v", s, budgeted)
	}
	l.Switch(naive)

	if got, ok := mode.From(ctx); !ok || got != budgeted {
		t.Errorf("after a switch, From(request) = %+v, %v; want the snapshot %+v", got, ok, budgeted)
	}
	if got := l.For(ctx); got != budgeted {
		t.Errorf("after a switch, For(request) = %+v, want the snapshot %+v", got, budgeted)
	}
	// A second snapshot of the same request keeps the first.
	if again, s := l.Snapshot(ctx); s != budgeted || again != ctx {
		t.Errorf("Snapshot of a request that has one = %+v (new context: %v), want its own %+v", s, again != ctx, budgeted)
	}
	if got := l.For(context.Background()); got != naive {
		t.Errorf("For(no request) = %+v, want the settings in force %+v", got, naive)
	}
	if got, _ := mode.From(mode.WithSettings(ctx, naive)); got != naive {
		t.Errorf("From(WithSettings(naive)) = %+v, want %+v", got, naive)
	}
}
