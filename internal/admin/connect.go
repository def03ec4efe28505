package admin

import (
	"net"
	"net/http"
	"time"
)

// connectTransport is http.DefaultTransport's settings with each connect
// bounded by d (zero: the default dialer's 30 s).
func connectTransport(d time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if d > 0 {
		t.DialContext = (&net.Dialer{Timeout: d, KeepAlive: 30 * time.Second}).DialContext
	}
	return t
}
