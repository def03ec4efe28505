//go:build unix

package faults

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// NoAccept is an address that accepts no connections: a dependency whose
// process is wedged, or a port behind a firewall that drops packets. Its
// listener never calls accept, and its backlog — the connections the
// kernel completes on a listener's behalf — is cut to nothing and filled,
// so on Linux a new connection's SYN goes unanswered and the dialer waits
// for as long as its own connect timeout lets it (nothing is refused:
// a refusal would fail at once and show nothing).
type NoAccept struct {
	ln    *net.TCPListener
	held  []net.Conn
	addr  string
	probe time.Duration
}

// ListenNoAccept opens a NoAccept on a loopback port.
func ListenNoAccept() (*NoAccept, error) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("no-accept listener: %w", err)
	}
	n := &NoAccept{ln: ln, addr: ln.Addr().String(), probe: 200 * time.Millisecond}
	if err := n.fill(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// fill shrinks the backlog to its least (listen again, with 0) and takes
// the connections it still completes, until a connect goes unanswered.
func (n *NoAccept) fill() error {
	rc, err := n.ln.SyscallConn()
	if err != nil {
		return fmt.Errorf("no-accept listener: %w", err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), 0) }); err != nil {
		return fmt.Errorf("no-accept listener: %w", err)
	}
	if lerr != nil {
		return fmt.Errorf("no-accept listener: shrinking the backlog: %w", lerr)
	}
	for range 16 {
		c, err := net.DialTimeout("tcp", n.addr, n.probe)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil // the backlog is full: SYNs now go unanswered
		}
		if err != nil {
			return fmt.Errorf("no-accept listener: filling the backlog: %w", err)
		}
		n.held = append(n.held, c)
	}
	return errors.New("no-accept listener: the kernel kept completing connections; its backlog cannot be filled here")
}

// Addr is the address to point a dependency's client at.
func (n *NoAccept) Addr() string { return n.addr }

// Close releases the port and the connections that fill its backlog.
func (n *NoAccept) Close() error {
	for _, c := range n.held {
		c.Close()
	}
	return n.ln.Close()
}
