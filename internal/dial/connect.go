package dial

import (
	"context"
	"net"
	"sync"
	"time"
)

// A connect timeout is not a read timeout. A call's cap (or its budget)
// bounds the dependency's work; the connect timeout bounds only the
// connection's making: the TCP connect and the HTTP/2 handshake, the
// server's first frame. An address that accepts nothing — a host that is
// gone, a port whose listener no longer takes connections — then fails in
// the connect timeout, and gRPC fails the calls waiting for it at once
// (Unavailable) while it backs off before the next try, instead of holding
// every one of them for gRPC's default of 20 s a try.
//
// grpc.WithConnectParams fixes that bound once, when the connection is
// made; Mercado's mode switches while it serves, so the dialer asks for the
// bound on every attempt.

// connectDialer returns a dialer that bounds each attempt by limit() at
// the time it starts; zero leaves gRPC's own bound (the context's
// deadline, 20 s by default).
func connectDialer(limit func() time.Duration) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		d := limit()
		if d <= 0 {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		}
		by := time.Now().Add(d)
		conn, err := (&net.Dialer{Deadline: by}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		// The handshake's share of the bound: the server must speak first
		// before it.
		if err := conn.SetDeadline(by); err != nil {
			conn.Close()
			return nil, err
		}
		return &handshakeConn{Conn: conn}, nil
	}
}

// handshakeConn is a connection under the connect timeout until the
// server's first bytes arrive; from then on the calls' own deadlines
// bound it.
type handshakeConn struct {
	net.Conn
	once sync.Once
}

func (c *handshakeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.once.Do(func() { _ = c.Conn.SetDeadline(time.Time{}) })
	}
	return n, err
}
