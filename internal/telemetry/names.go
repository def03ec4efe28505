package telemetry

// Metric family names exactly as they appear on /metrics. The exporter is
// told to add no suffixes (see New), so the names below are the instrument
// names too: what a learner greps for in the code is what Prometheus shows.
const (
	NameBudgetRemainingOnArrival = "mercado_budget_remaining_on_arrival_seconds"
	NameRequests                 = "mercado_requests_total"
	NameSkipped                  = "mercado_skipped_total"
	NameHopDuration              = "mercado_hop_duration_seconds"
	NameLateCompletions          = "mercado_late_completions_total"
	NameLateWork                 = "mercado_late_work_seconds_total"
	NameAttempts                 = "mercado_attempts_total"
	NameRetries                  = "mercado_retries_total"
	NameBreakerTransitions       = "mercado_breaker_transitions_total"
	NameModeChanges              = "mercado_mode_changes_total"
	NamePoolInFlight             = "mercado_pool_in_flight"
	NamePoolWaiting              = "mercado_pool_waiting"
	NamePoolCapacity             = "mercado_pool_capacity"
	NamePoolRejections           = "mercado_pool_rejections_total"
	NameBreakerState             = "mercado_breaker_state"
	NameDeadlineClamps           = "mercado_deadline_clamps_total"
	// Budget headroom per hop (deploy/prometheus/alerts.yml): the timeout
	// each call was given, the dependency's cap, and the calls the budget
	// skipped or cut.
	NameHopTimeout      = "mercado_hop_timeout_seconds"
	NameHopCap          = "mercado_hop_cap_seconds"
	NameBudgetExhausted = "mercado_budget_exhausted_total"
	// Criticality (criticality.go): degraded answers and the audit queue.
	NameDegraded        = "mercado_degraded_total"
	NameAuditEvents     = "mercado_audit_events_total"
	NameAuditRetries    = "mercado_audit_retries_total"
	NameAuditQueueDepth = "mercado_audit_queue_depth"
	// The catalog's wait for its products' locks (services/catalog): from
	// asking the store to reserve to holding the locks (outcome locked), or
	// to giving up for want of time (gave_up). On PostgreSQL it includes
	// the wait for a connection and the reservation's first statements, a
	// millisecond or two when nothing queues.
	NameStockLockWait = "mercado_stock_lock_wait_seconds"
)

// Reasons a call or request was not served, the values of the reason label
// of mercado_skipped_total.
const (
	// The caller did not make the call: remaining − margin was below the floor.
	ReasonInsufficientBudget = "insufficient_budget"
	// The dependency's circuit breaker was open.
	ReasonBreakerOpen = "breaker_open"
	// The dependency's bulkhead had no free slot within the budget.
	ReasonBulkheadFull = "bulkhead_full"
	// The request's deadline had already passed when it arrived.
	ReasonExpiredOnArrival = "expired_on_arrival"
	// The request arrived with less than the floor left.
	ReasonBelowFloorOnArrival = "below_floor_on_arrival"
	// The deadline passed while the request waited for a pool slot
	// ("queue wait counts against the budget").
	ReasonExpiredAtDequeue = "expired_at_dequeue"
)

// Breaker states as reported by mercado_breaker_state. They match the
// values of breaker.State, so int(b.State()) can be passed as is.
const (
	BreakerClosed   = 0
	BreakerHalfOpen = 1
	BreakerOpen     = 2
)

// Label names.
const (
	labelService = "service"
	labelMethod  = "method"
	labelReason  = "reason"
	labelDep     = "dep"
	labelOutcome = "outcome"
	labelFrom    = "from"
	labelTo      = "to"
	labelMode    = "mode"
	labelPool    = "pool"
	labelClass   = "class"
)

// Classes are the values of the class label: pkg/deadline's traffic
// classes.
var classes = []string{"interactive", "background", "batch"}

// SecondsBuckets span 1 ms to 30 s. Between 0.1 and 1.2 s they sit on the
// lesson's numbers (floor 100 ms; caps 300 and 800 ms; budget 1200 ms), so
// "how many hops ended at the cap" is a bucket boundary, not a guess.
var SecondsBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.2, 0.3, 0.5, 0.8, 1.2,
	2.5, 5, 10, 30,
}
