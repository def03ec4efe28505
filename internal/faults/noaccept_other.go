//go:build !unix

package faults

import "errors"

// NoAccept is an address that accepts no connections (see noaccept.go);
// it needs a Unix kernel's listen backlog.
type NoAccept struct{}

// ListenNoAccept reports that this platform cannot make one.
func ListenNoAccept() (*NoAccept, error) {
	return nil, errors.New("no-accept listener: needs a Unix kernel")
}

// Addr is empty: there is no listener.
func (n *NoAccept) Addr() string { return "" }

// Close does nothing.
func (n *NoAccept) Close() error { return nil }
