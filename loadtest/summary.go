package loadtest

import (
	"math"
	"net/http"
	"slices"
	"time"
)

// Summary is one class's figures, computed exactly from every sample.
type Summary struct {
	Class    string `json:"class"`
	Requests int    `json:"requests"`
	// OK counts 2xx answers; Good counts the final ones within the
	// deadline (Sample.Good).
	OK   int `json:"ok"`
	Good int `json:"good"`
	// Accepted counts the 202 processing answers among OK: the shop took
	// the checkout without knowing its outcome. Confirmed counts those
	// whose order was confirmed by the end of the run; the others are not
	// good, however fast they came.
	Accepted  int `json:"accepted"`
	Confirmed int `json:"accepted_confirmed"`
	// SuccessRatio is Good / Requests.
	SuccessRatio float64 `json:"success_ratio"`
	// Goodput is good answers per second of the run.
	Goodput float64 `json:"goodput_per_s"`
	// Percentiles of latency from the intended send time, in ms.
	P50MS  float64 `json:"p50_ms"`
	P90MS  float64 `json:"p90_ms"`
	P99MS  float64 `json:"p99_ms"`
	P999MS float64 `json:"p999_ms"`
	MaxMS  float64 `json:"max_ms"`
	// Failures counts failed requests by class of failure.
	Failures map[string]int `json:"failures"`
	// ClientRetries counts the extra tries of clients that retry.
	ClientRetries int `json:"client_retries"`
	// Degraded counts good answers marked degraded: an optional part holds
	// its default value. DegradedRatio is Degraded / Good.
	Degraded      int     `json:"degraded"`
	DegradedRatio float64 `json:"degraded_ratio"`
	// Predicted is the class's latency as `mercado budget predict`
	// composes it from the hops' histograms over the same span, when the
	// lab could (the checkout, on a shop it started).
	Predicted *Predicted `json:"predicted,omitempty"`
}

// Predicted is a prediction of a class's latency from its calls'
// distributions (internal/budget's Predict), beside what was measured.
type Predicted struct {
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	// MissShare is the share of requests predicted to miss the deadline.
	MissShare float64 `json:"miss_share"`
}

// Assumption words for Summary.Parted.
const (
	PredictionAgrees   = "agrees"
	PredictionRetries  = "slower: retries"
	PredictionQueueing = "slower: queueing"
	PredictionBuckets  = "faster: buckets"
)

// A measured p99 agrees with its prediction between AgreeLow and
// AgreeHigh times it, or within OwnWorkMS of it however small it is: the
// services' own work, which the prediction leaves out, takes a few
// milliseconds a checkout (docs/loadtest.md).
const (
	AgreeLow  = 0.8
	AgreeHigh = 1.25
	OwnWorkMS = 10
)

// Parted says whether s's measured p99 agrees with its prediction — from
// AgreeLow to AgreeHigh times it, or within OwnWorkMS — and when it does not,
// which of the prediction's assumptions the span broke. Slower: the
// services retried in the span (the prediction makes each call once), or
// else the requests spent time outside their calls — waiting for a pool
// or a lock's line — which the prediction does not know. Faster: the
// hops' histograms are read linearly within their buckets, as wide as 500
// to 800 ms, which spreads a tail wider than it is. "" without a
// prediction.
func (s Summary) Parted(server ServerFigures) string {
	if s.Predicted == nil || s.Predicted.P99MS <= 0 {
		return ""
	}
	r, gap := s.P99MS/s.Predicted.P99MS, s.P99MS-s.Predicted.P99MS
	switch {
	case math.Abs(gap) <= OwnWorkMS:
	case r > AgreeHigh && server.Retries > 0:
		return PredictionRetries
	case r > AgreeHigh:
		return PredictionQueueing
	case r < AgreeLow:
		return PredictionBuckets
	}
	return PredictionAgrees
}

// Summarize computes a class's figures. A request is good when it got a
// final answer within deadline (Sample.Good); the run lasted duration.
func Summarize(class string, samples []Sample, deadline, duration time.Duration) Summary {
	s := Summary{Class: class, Requests: len(samples), Failures: map[string]int{}}
	lat := make([]time.Duration, 0, len(samples))
	for _, x := range samples {
		lat = append(lat, x.Latency)
		s.ClientRetries += max(x.Attempts-1, 0)
		if x.Failure != "" {
			s.Failures[x.Failure]++
			continue
		}
		s.OK++
		if x.Code == http.StatusAccepted {
			s.Accepted++
			if x.Confirmed {
				s.Confirmed++
			}
		}
		if x.Good(deadline) {
			s.Good++
			if x.Degraded {
				s.Degraded++
			}
		}
	}
	if len(samples) == 0 {
		return s
	}
	s.SuccessRatio = float64(s.Good) / float64(s.Requests)
	if s.Good > 0 {
		s.DegradedRatio = float64(s.Degraded) / float64(s.Good)
	}
	if duration > 0 {
		s.Goodput = float64(s.Good) / duration.Seconds()
	}
	slices.Sort(lat)
	s.P50MS, s.P90MS, s.P99MS, s.P999MS = ms(Percentile(lat, 50)), ms(Percentile(lat, 90)), ms(Percentile(lat, 99)), ms(Percentile(lat, 99.9))
	s.MaxMS = ms(lat[len(lat)-1])
	return s
}

// Percentile returns the p-th percentile (nearest rank) of sorted values.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }

// PercentileInterval returns a confidence interval for the p-th
// percentile of the population sorted was drawn from: the order
// statistics whose ranks bound, at about 95% confidence, the rank of
// that percentile among len(sorted) draws. The count of draws below the
// true percentile is binomial (n, p/100); its normal approximation gives
// the ranks n·q ∓ 1.96·√(n·q·(1−q)). Few draws make a wide interval: a
// hundred's p99 interval runs from the 97th value to the largest.
func PercentileInterval(sorted []time.Duration, p float64) (lo, hi time.Duration) {
	n := len(sorted)
	if n == 0 {
		return 0, 0
	}
	q := p / 100
	mid, spread := float64(n)*q, 1.96*math.Sqrt(float64(n)*q*(1-q))
	l := min(max(int(math.Floor(mid-spread)), 1), n)
	u := min(max(int(math.Ceil(mid+spread)), 1), n)
	return sorted[l-1], sorted[u-1]
}
