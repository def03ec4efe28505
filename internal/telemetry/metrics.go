package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"
)

// scopeName names the meter and the resource namespace.
const scopeName = "mercado"

// Metrics is one service's metrics: its own Prometheus registry, its own
// MeterProvider, and the instruments every service records. Create it with
// [New]; all methods are safe for concurrent use.
type Metrics struct {
	registry *prometheus.Registry
	provider *sdkmetric.MeterProvider
	meter    metric.Meter

	requests           metric.Int64Counter
	remainingOnArrival metric.Float64Histogram
	skipped            metric.Int64Counter
	hopDuration        metric.Float64Histogram
	hopTimeout         metric.Float64Histogram
	budgetExhausted    metric.Int64Counter
	lateCompletions    metric.Int64Counter
	lateWork           metric.Float64Counter
	attempts           metric.Int64Counter
	retries            metric.Int64Counter
	breakerTransitions metric.Int64Counter
	modeChanges        metric.Int64Counter
	poolRejections     metric.Int64Counter
	deadlineClamps     metric.Int64Counter

	poolInFlight metric.Int64ObservableGauge
	poolWaiting  metric.Int64ObservableGauge
	poolCapacity metric.Int64ObservableGauge
	breakerState metric.Int64ObservableGauge
	hopCap       metric.Float64ObservableGauge

	methods     *attrCache[string]
	reasons     *attrCache[string]
	deps        *attrCache[string]
	modes       *attrCache[string]
	pools       *attrCache[string]
	poolClasses *attrCache[poolKey]
	classes     *attrCache[string]
	hops        *attrCache[hopKey]
	transitions *attrCache[transitionKey]

	observed observed
	crit     criticality
}

// New returns the metrics of one service. Every series it exposes carries
// the label service=<service>.
func New(service string) (*Metrics, error) {
	if service == "" {
		return nil, errors.New("telemetry: service name is empty")
	}

	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(
		// The service label is a constant label of this service's
		// registry, so it is on every series without being an attribute
		// of every measurement.
		otelprom.WithRegisterer(prometheus.WrapRegistererWith(prometheus.Labels{labelService: service}, registry)),
		// Instruments are named exactly as Prometheus shows them; the
		// exporter adds no _total or unit suffix of its own.
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithoutSuffixes),
		// No target_info series and no otel_scope_* labels: one process
		// serves five registries and the service label already says whose
		// data it is.
		otelprom.WithoutTargetInfo(),
		otelprom.WithoutScopeInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter for %s: %w", service, err)
	}

	res := resource.NewSchemaless(
		attribute.String("service.namespace", scopeName),
		attribute.String("service.name", service),
	)
	provider := sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(exporter),
		// The Prometheus text format cannot carry exemplars, so sampling
		// them on every traced request would be work for nobody.
		sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter),
	)

	m := &Metrics{
		registry:    registry,
		provider:    provider,
		meter:       provider.Meter(scopeName),
		methods:     newAttrCache(oneLabel(labelMethod)),
		reasons:     newAttrCache(oneLabel(labelReason)),
		deps:        newAttrCache(oneLabel(labelDep)),
		modes:       newAttrCache(oneLabel(labelMode)),
		pools:       newAttrCache(oneLabel(labelPool)),
		poolClasses: newAttrCache(poolAttrs),
		classes:     newAttrCache(oneLabel(labelClass)),
		hops:        newAttrCache(hopAttrs),
		transitions: newAttrCache(transitionAttrs),
	}
	if err := errors.Join(m.instruments(), m.criticalityInstruments()); err != nil {
		_ = provider.Shutdown(context.Background())
		return nil, fmt.Errorf("telemetry: instruments for %s: %w", service, err)
	}
	m.zeroAtStart()
	return m, nil
}

// instruments creates every instrument and registers the callback that
// reads pools and breakers at scrape time.
func (m *Metrics) instruments() error {
	var errs []error
	counter := func(name, help string, o ...metric.Int64CounterOption) metric.Int64Counter {
		c, err := m.meter.Int64Counter(name, append(o, metric.WithDescription(help))...)
		errs = append(errs, err)
		return c
	}
	seconds := func(name, help string) metric.Float64Histogram {
		h, err := m.meter.Float64Histogram(name,
			metric.WithDescription(help),
			metric.WithUnit("s"),
			metric.WithExplicitBucketBoundaries(SecondsBuckets...))
		errs = append(errs, err)
		return h
	}
	gauge := func(name, help string) metric.Int64ObservableGauge {
		g, err := m.meter.Int64ObservableGauge(name, metric.WithDescription(help))
		errs = append(errs, err)
		return g
	}

	m.requests = counter(NameRequests, "Requests that reached this service, by method.")
	m.remainingOnArrival = seconds(NameBudgetRemainingOnArrival, "Budget left when a request carrying a deadline arrived, by method.")
	m.skipped = counter(NameSkipped, "Calls or requests not served, by reason.")
	m.hopDuration = seconds(NameHopDuration, "Duration of outbound calls, by dependency and outcome.")
	m.hopTimeout = seconds(NameHopTimeout, "Timeout given to each outbound call made (the cap, or less when the budget left was shorter), by dependency.")
	m.budgetExhausted = counter(NameBudgetExhausted, "Outbound calls the budget skipped (less than the floor left) or cut short (the budget, not the cap, ended them), by dependency.")
	m.lateCompletions = counter(NameLateCompletions, "Requests finished after the client's deadline had passed, by method.")
	var err error
	m.lateWork, err = m.meter.Float64Counter(NameLateWork,
		metric.WithDescription("Seconds of work done after the client's deadline had passed (work for the trash), by method."),
		metric.WithUnit("s"))
	errs = append(errs, err)
	m.attempts = counter(NameAttempts, "Outbound call attempts, first tries and retries, by dependency.")
	m.retries = counter(NameRetries, "Outbound call attempts that were retries, by dependency.")
	m.breakerTransitions = counter(NameBreakerTransitions, "Circuit breaker state changes, by dependency.")
	m.modeChanges = counter(NameModeChanges, "Switches of the service's mode, by the mode switched to.")
	m.poolRejections = counter(NamePoolRejections, "Requests turned away by a full pool or bulkhead, by pool and traffic class.")
	m.deadlineClamps = counter(NameDeadlineClamps, "Requests whose deadline this server cut down to its class's maximum, by traffic class.")

	m.poolInFlight = gauge(NamePoolInFlight, "Work items running in a pool or bulkhead, by pool.")
	m.poolWaiting = gauge(NamePoolWaiting, "Work items waiting for a slot in a pool or bulkhead, by pool.")
	m.poolCapacity = gauge(NamePoolCapacity, "Slots of a pool or bulkhead, by pool.")
	m.breakerState = gauge(NameBreakerState, "Circuit breaker state by dependency: 0 closed, 1 half-open, 2 open.")
	m.hopCap, err = m.meter.Float64ObservableGauge(NameHopCap,
		metric.WithDescription("The cap of each dependency: its calls' own timeout, the most one call may be given, by dependency."),
		metric.WithUnit("s"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return err
	}

	_, err = m.meter.RegisterCallback(m.observe,
		m.poolInFlight, m.poolWaiting, m.poolCapacity, m.breakerState, m.hopCap)
	return err
}

// Handler serves this service's metrics in the Prometheus exposition
// format, and nothing of any other service.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Shutdown stops the MeterProvider. Recording after it is a no-op and
// Handler serves no series.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.provider.Shutdown(ctx)
}

// Custom returns the service's meter, for instruments beyond the shared
// ones. They are exported on the same /metrics. Their names are shown as
// given (no suffix is added), and an attribute named "service" would clash
// with the label every series already carries.
func (m *Metrics) Custom() metric.Meter {
	if m == nil {
		return noop.NewMeterProvider().Meter(scopeName)
	}
	return m.meter
}

// observed holds the pools and breakers read at scrape time.
type observed struct {
	mu       sync.Mutex
	pools    map[string]poolObserver
	breakers map[string]breakerObserver
	caps     map[string]capObserver
}
