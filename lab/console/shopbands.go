package console

import (
	"strings"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/sim"
)

// ShopBand is a stretch of time over which the shop kept one mode (the
// gateway's) and one set of faults, as the console's ticks read them. A
// run from elsewhere (mercado load) switches the mode and the faults
// through the admin APIs, as the console's own runs do; the gateway
// view's charts draw these bands, as they draw a console run's phases, so
// that a line is read against what the shop had.
type ShopBand struct {
	Mode mode.Mode `json:"mode"`
	// Faults are the faults in force, in words: "shipping
	// CreateShipment:hang=5s"; empty when there are none.
	Faults string `json:"faults,omitempty"`
	// FromMS is the tick that first saw the stretch, ToMS the last
	// (Unix ms): a change falls between one band's end and the next's
	// start.
	FromMS int64 `json:"from_ms"`
	ToMS   int64 `json:"to_ms"`
}

// shopBands keeps the bands of the last minutes.
type shopBands struct {
	mu    sync.Mutex
	bands []ShopBand
}

// note files the shop st shows at now: the last band goes on, or a new
// one begins if the mode or the faults changed. A state in which a
// service did not answer says nothing: its faults are not known.
func (s *shopBands) note(now time.Time, st State) {
	m, faults, ok := describeShop(st)
	if !ok {
		return
	}
	at := now.UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.bands); n > 0 {
		last := &s.bands[n-1]
		switch {
		case at < last.ToMS: // a tick taken before the last one filed
			return
		case last.Mode == m && last.Faults == faults:
			last.ToMS = at
			return
		}
	}
	s.bands = append(s.bands, ShopBand{Mode: m, Faults: faults, FromMS: at, ToMS: at})
	for len(s.bands) > 1 && at-s.bands[0].ToMS > (2*window).Milliseconds() {
		s.bands = s.bands[1:]
	}
}

// window is the bands that reach into the last span before now.
func (s *shopBands) window(now time.Time, span time.Duration) []ShopBand {
	from := now.Add(-span).UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []ShopBand{}
	for _, b := range s.bands {
		if b.ToMS >= from {
			out = append(out, b)
		}
	}
	return out
}

// describeShop is the gateway's mode in st, and every service's and
// link's faults in words, edge first: "shipping CreateShipment:hang=5s;
// orders-shipping latency=150ms". ok is false when a service did not
// answer.
func describeShop(st State) (m mode.Mode, faults string, ok bool) {
	var parts []string
	for _, svc := range st.Services {
		if svc.Mode == nil || svc.Error != "" {
			return "", "", false
		}
		if svc.Name == sim.ServiceGateway {
			m = svc.Mode.Mode
		}
		if len(svc.Faults) == 0 {
			continue
		}
		var specs []string
		for _, method := range sortedKeys(svc.Faults) {
			specs = append(specs, method+":"+svc.Faults[method].String())
		}
		parts = append(parts, svc.Name+" "+strings.Join(specs, " "))
	}
	if st.NetworkError != "" {
		return "", "", false
	}
	for _, l := range st.Network {
		if len(l.Faults) > 0 {
			parts = append(parts, l.Name+" "+l.Faults.String())
		}
	}
	return m, strings.Join(parts, "; "), m != ""
}
