package gateway

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/problem"
)

// ConsoleFunc builds the live console the gateway's admin listener serves
// under /console/, once the gateway listens, from where it does. The
// console (lab/console) drives traffic and scenarios, which a service
// may not import; so whoever starts the gateway (mercado serve) hands it
// over. It serves until ctx ends, when the gateway stops.
type ConsoleFunc func(ctx context.Context, at Listening) http.Handler

// Listening is where the gateway and the shop's admin APIs answer, and
// what the gateway answers there.
type Listening struct {
	// URL and AdminURL are the gateway's own listeners, on loopback when
	// they listen on every interface.
	URL, AdminURL string
	// Peers are the other services' admin APIs (Config.AdminPeers);
	// NetworkAdmin the wire's, empty when there is none.
	Peers        []admin.Peer
	NetworkAdmin string
	// Token is the admin token, empty when changes need none.
	Token string
	// Answers tells of every public request the gateway answers, whoever
	// sent it.
	Answers *Answers
}

// consoleSlot is the console's place on the admin listener: the route
// is registered before the gateway starts, the console set once it has.
type consoleSlot struct{ h atomic.Pointer[http.Handler] }

func (s *consoleSlot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := s.h.Load()
	if h == nil {
		problem.Write(w, r, http.StatusServiceUnavailable, "the console is starting")
		return
	}
	(*h).ServeHTTP(w, r)
}

func (s *consoleSlot) set(h http.Handler) { s.h.Store(&h) }

// loopbackURL is the base URL of a listener bound to addr, with an
// address of every interface (":8080", "[::]:8080") reached on loopback.
func loopbackURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
