package resilience

import (
	"context"

	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// arrivalHooks feed the metrics and the request's server span from
// pkg/deadline's server side: the remaining budget on arrival, requests
// turned away on arrival, and work finished after the client had given up.
func arrivalHooks(m *telemetry.Metrics, tr *telemetry.Tracing, log budgetLog) deadline.Hooks {
	return deadline.Hooks{
		OnArrival: func(ctx context.Context, a deadline.ArrivalInfo) {
			log.arrival(ctx, a)
			m.Arrival(ctx, a.Method, a.Remaining, a.HasBudget)
			tr.Arrival(ctx, a)
			if a.Rejected {
				reason := telemetry.ReasonExpiredOnArrival
				if a.Reason == deadline.ReasonBelowFloor {
					reason = telemetry.ReasonBelowFloorOnArrival
				}
				m.Skipped(ctx, reason)
			}
			if a.Clamped {
				m.DeadlineClamped(ctx, string(a.Class))
			}
		},
		OnLate: func(ctx context.Context, l deadline.LateInfo) {
			m.Late(ctx, l.Method, l.Late)
			tr.Late(ctx, l.Late)
		},
	}
}
