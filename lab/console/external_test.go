package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/lab/console"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/loadtest"
)

// sendElsewhere sends checkouts and browsing straight to the gateway, as
// mercado load in another terminal does, for d; the returned channel
// closes once every answer is in.
func sendElsewhere(t *testing.T, gatewayURL string, checkouts, browses float64, d time.Duration) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	cat, err := loadtest.ReadCatalogue(context.Background(), gatewayURL)
	if err != nil {
		t.Fatal(err)
	}
	classes := []loadtest.Class{
		{Name: "checkout", Rate: checkouts, Deadline: time.Second, Request: loadtest.CheckoutRequest("elsewhere-"+t.Name(), cat, loadtest.Basket{})},
		{Name: "browse", Rate: browses, Deadline: time.Second, Request: cat.BrowseRequest},
	}
	go func() {
		defer close(done)
		if _, err := loadtest.Run(context.Background(), loadtest.Options{Base: gatewayURL, Duration: d}, classes...); err != nil {
			t.Errorf("sending from elsewhere: %v", err)
		}
	}()
	return done
}

// nextTick reads the stream up to its next tick.
func nextTick(t *testing.T, r *bufio.Reader) console.TickEvent {
	t.Helper()
	for {
		name, data := readEvent(t, r)
		if name != "tick" {
			continue
		}
		var tick console.TickEvent
		if err := json.Unmarshal([]byte(data), &tick); err != nil {
			t.Fatalf("tick data is not JSON: %v: %s", err, data)
		}
		return tick
	}
}

// goodOf is how many good answers points hold.
func goodOf(points []console.Point) int {
	n := 0
	for _, p := range points {
		n += p.Good
	}
	return n
}

// Traffic sent to the gateway from elsewhere, while the console sends
// none, is charted as the gateway answered it, and a mode switched from
// elsewhere is a band on the charts: the console's ticks see the change.
func TestTrafficFromElsewhereIsCharted(t *testing.T) {
	s, base := startShop(t, shop.EphemeralConfig())
	_, r := events(t, base, time.Minute)
	if tick := nextTick(t, r); tick.View != console.ViewGateway {
		t.Fatalf("a console that sends nothing shows the %q view, want %q", tick.View, console.ViewGateway)
	}
	done := sendElsewhere(t, s.GatewayURL(), 20, 10, 4*time.Second)
	time.Sleep(2 * time.Second)
	gw := admin.Client{URL: "http://" + s.Gateway.AdminAddr}
	if _, err := gw.Switch(context.Background(), admin.ModeChange{Mode: mode.Naive}); err != nil {
		t.Fatal(err)
	}
	<-done

	var tick console.TickEvent
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		tick = nextTick(t, r)
		if goodOf(tick.Classes["checkout"]) >= 60 && goodOf(tick.Classes["browse"]) >= 30 && hasSwitch(tick.ShopBands) {
			break
		}
	}
	if tick.View != console.ViewGateway {
		t.Errorf("view %q, want %q: the console sent nothing", tick.View, console.ViewGateway)
	}
	for _, class := range []string{"checkout", "browse"} {
		points := tick.Classes[class]
		if len(points) == 0 || goodOf(points) == 0 {
			t.Errorf("%s: points %+v, want the gateway's answers, some good", class, points)
		}
		for _, p := range points {
			if p.Good > p.Sent || p.Sent > 0 && p.P50MS <= 0 {
				t.Errorf("%s: point %+v: want good within sent, and a latency", class, p)
			}
		}
	}
	if tick.DeadlineMS["checkout"] != 1000 {
		t.Errorf("checkout's deadline %d ms, want the 1000 its client gave", tick.DeadlineMS["checkout"])
	}
	if !hasSwitch(tick.ShopBands) {
		t.Errorf("bands %+v, want budgeted then naive", tick.ShopBands)
	}
}

// hasSwitch reports a band in naive mode after one in budgeted.
func hasSwitch(bands []console.ShopBand) bool {
	for i := 1; i < len(bands); i++ {
		if bands[i-1].Mode == mode.Budgeted && bands[i].Mode == mode.Naive && bands[i].FromMS > bands[i-1].FromMS {
			return true
		}
	}
	return false
}

// While the console's own traffic runs, the charts are its traffic as
// its clients saw it, and nothing sent from elsewhere is counted in them.
func TestConsoleTrafficIsChartedAlone(t *testing.T) {
	s, base := startShop(t, shop.EphemeralConfig())
	_, r := events(t, base, time.Minute)
	if status, _, body := call(t, http.MethodPut, base+"api/traffic", "", "application/json", `{"checkout":2,"deadline_ms":1000}`); status != http.StatusOK {
		t.Fatalf("PUT api/traffic = %d %s", status, body)
	}
	done := sendElsewhere(t, s.GatewayURL(), 20, 10, 4*time.Second)
	seen := 0
	for !isDone(done) {
		tick := nextTick(t, r)
		if !tick.State.Traffic.Running {
			continue // a tick taken before the traffic started
		}
		if tick.View != console.ViewConsole {
			t.Fatalf("view %q while the console's traffic runs, want %q", tick.View, console.ViewConsole)
		}
		if len(tick.Classes["browse"]) > 0 {
			t.Errorf("browse points %+v: the console sends none, so they are another client's, counted in its view", tick.Classes["browse"])
		}
		for _, p := range tick.Classes["checkout"] {
			if p.Sent > 2 {
				t.Errorf("checkout point %+v: more than the console's 2 a second", p)
			}
		}
		seen += len(tick.Classes["checkout"])
	}
	if seen == 0 {
		t.Error("no checkout point of the console's own traffic")
	}
	if status, _, body := call(t, http.MethodDelete, base+"api/traffic", "", "", ""); status != http.StatusOK {
		t.Fatalf("DELETE api/traffic = %d %s", status, body)
	}
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
