package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// hub passes events to every page that listens. A page that falls behind
// loses events rather than holding the others up: the next tick carries
// the whole minute again.
type hub struct {
	mu   sync.Mutex
	subs map[chan []byte]struct{}
}

func newHub() *hub { return &hub{subs: map[chan []byte]struct{}{}} }

func (h *hub) subscribe() chan []byte {
	ch := make(chan []byte, 16)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch
}

func (h *hub) unsubscribe(ch chan []byte) {
	h.mu.Lock()
	delete(h.subs, ch)
	h.mu.Unlock()
}

// listeners is how many pages listen.
func (h *hub) listeners() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// publish sends v, as JSON, to every listener as an event named event.
func (h *hub) publish(event string, v any) {
	msg, err := frame(event, v)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- msg:
		default:
		}
	}
}

// frame is one server-sent event: its name, and its data on one line
// (JSON holds no raw newline), ended by a blank line.
func frame(event string, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "event: %s\ndata: %s\n\n", event, data), nil
}

// eventWriteTimeout bounds each write of an event stream. The admin
// listener's write timeout (internal/serve) would end a stream after 30
// s; each write pushes the deadline on instead, so a page that stops
// reading is dropped within this, and one that reads stays.
const eventWriteTimeout = 10 * time.Second

// events streams the console's events to one page until it leaves or the
// console stops: first the state and the recent checkouts, so that the
// page has something to show at once, then every tick and checkout.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold the events back
	ch := c.hub.subscribe()
	defer c.hub.unsubscribe(ch)
	send := func(msg []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
		if _, err := w.Write(msg); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send([]byte("retry: 2000\n\n")) {
		return
	}
	if msg, err := frame("tick", c.tick(r.Context())); err != nil || !send(msg) {
		return
	}
	for _, co := range c.chain.recent() {
		if msg, err := frame("checkout", co); err != nil || !send(msg) {
			return
		}
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.ctx.Done():
			return
		case msg := <-ch:
			if !send(msg) {
				return
			}
		}
	}
}

// TickEvent is what a "tick" event carries: the controls' state, and a
// minute of the live charts' history.
type TickEvent struct {
	// At is when the tick was taken, Unix milliseconds.
	At    int64 `json:"at"`
	State State `json:"state"`
	// View says whose traffic Classes are: ViewConsole while the
	// console's own traffic or a scenario run from it runs, ViewGateway
	// otherwise.
	View string `json:"view"`
	// Classes are the traffic, one point a second by class.
	Classes map[string][]Point `json:"classes"`
	// DeadlineMS is each class's deadline, drawn on its latency chart.
	DeadlineMS map[string]int64 `json:"deadline_ms"`
	// ShopBands are the shop's modes and faults over the minute, which
	// the gateway view's charts draw (a console run's phases are in
	// State.Run).
	ShopBands []ShopBand `json:"shop_bands"`
	// Gauges are the services' pools, breakers, skipped calls and late
	// work, one sample a tick.
	Gauges []GaugeSample `json:"gauges"`
	// ScrapeError says why the last scrape failed, when it did.
	ScrapeError string `json:"scrape_error,omitempty"`
}

// tick takes one sample of everything the page shows. The charts show
// the console's traffic as its clients saw it while it sends any, and
// what the gateway answered otherwise: never both, so that no request is
// counted twice.
func (c *Console) tick(ctx context.Context) TickEvent {
	st := c.state(ctx)
	now := time.Now()
	c.shopBands.note(now, st)
	ev := TickEvent{At: now.UnixMilli(), State: st, View: ViewGateway, ShopBands: c.shopBands.window(now, window),
		Gauges: c.gauges.history(), ScrapeError: c.gauges.lastError()}
	if st.Traffic.Running || st.Run != nil && st.Run.State == "running" {
		ev.View = ViewConsole
		ev.Classes, ev.DeadlineMS = c.traffic.window(now, window)
	} else {
		ev.Classes, ev.DeadlineMS = c.answered.window(now, window)
	}
	return ev
}

// window is how much history the charts hold.
const window = time.Minute

// sample scrapes the shop and pushes a tick every Tick while any page
// listens, until ctx ends.
func (c *Console) sample(ctx context.Context) {
	t := time.NewTicker(Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.hub.listeners() == 0 && !c.traffic.running() {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, readTimeout)
		all, err := c.shop.Scrape(sctx)
		cancel()
		c.gauges.add(time.Now(), all, err)
		if c.hub.listeners() > 0 {
			c.hub.publish("tick", c.tick(ctx))
		}
	}
}
