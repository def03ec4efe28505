package console

import (
	"net/http"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/services/gateway"
)

// Whose traffic the goodput and latency charts show (TickEvent.View).
const (
	// ViewConsole is the console's own traffic, or its scenario run's,
	// as its clients saw it: a request that got no answer counts too.
	ViewConsole = "console"
	// ViewGateway is every request the gateway answered, as the gateway
	// saw it: shown while the console sends nothing itself, so that
	// traffic sent from elsewhere (mercado load in another terminal,
	// curl) is charted too.
	ViewGateway = "gateway"
)

// answered keeps a minute of the gateway's answers, by class and by the
// second each request arrived in. The gateway tells it of each as it
// answers (gateway.Answers), on the request's goroutine: filing one
// holds the lock for an append.
type answered struct {
	mu       sync.Mutex
	seconds  map[string]bySecond      // by class, then by the second of arrival (Unix ms)
	deadline map[string]time.Duration // by class, the latest answer's
}

func newAnswered() *answered {
	return &answered{seconds: map[string]bySecond{}, deadline: map[string]time.Duration{}}
}

// charted are the route groups the charts have a class for; an order's
// status, which a client asks after a checkout, is not one.
var charted = map[string]bool{"checkout": true, "browse": true, "export": true}

// observe files one of the gateway's answers: good when a success
// within the deadline its client gave.
func (a *answered) observe(x gateway.Answer) {
	if !charted[x.Route] {
		return
	}
	good := x.Status >= http.StatusOK && x.Status < http.StatusMultipleChoices && x.Took <= x.Deadline
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seconds[x.Route] == nil {
		a.seconds[x.Route] = bySecond{}
	}
	a.seconds[x.Route].add(x.At.Truncate(time.Second).UnixMilli(), good, x.Took)
	a.deadline[x.Route] = x.Deadline
}

// window is the last span of seconds before now, one point a second by
// class, and each class's deadline in ms: the one its latest answer's
// client gave, or the page's default before any.
func (a *answered) window(now time.Time, span time.Duration) (map[string][]Point, map[string]int64) {
	from := now.Add(-span).UnixMilli()
	dl := classDeadlines(defaultDeadline.Milliseconds())
	a.mu.Lock()
	secs := map[string]map[int64]second{}
	for class, bySec := range a.seconds {
		secs[class] = bySec.since(from)
	}
	for class, d := range a.deadline {
		dl[class] = d.Milliseconds()
	}
	a.mu.Unlock()
	out := map[string][]Point{}
	for class, s := range secs {
		if len(s) > 0 {
			out[class] = points(s)
		}
	}
	return out, dl
}
