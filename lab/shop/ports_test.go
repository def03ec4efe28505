package shop_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/mercado-lab/mercado/lab/shop"
)

// The kernel hands ports from its ephemeral range (32768–60999 on Linux by
// default) to outgoing connections, and a closed client socket holds its
// port in TIME-WAIT: a default port inside that range can be taken by
// accident (docs/deploy.md, "Ports").
func TestDefaultPortsLieOutsideTheEphemeralRange(t *testing.T) {
	const ephemeralLow, ephemeralHigh = 32768, 60999
	for name, c := range shop.Defaults() {
		for _, addr := range []string{c.Addr, c.AdminAddr} {
			_, p, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, addr, err)
			}
			port, err := strconv.Atoi(p)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, addr, err)
			}
			if port >= ephemeralLow && port <= ephemeralHigh {
				t.Errorf("%s listens on %d by default, inside the ephemeral range %d–%d", name, port, ephemeralLow, ephemeralHigh)
			}
		}
	}
}
