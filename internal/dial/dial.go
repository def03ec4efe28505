// Package dial opens Mercado's gRPC client connections.
package dial

import (
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"
)

// maxMessageBytes matches the servers' limit.
const maxMessageBytes = 1 << 20

// The flow-control windows match the servers' (internal/serve, where the
// reason is): static, which switches off gRPC's ping-driven estimate of the
// link, a stream's window the largest message and a connection's four.
const (
	streamWindowBytes = maxMessageBytes
	connWindowBytes   = 4 * maxMessageBytes
)

// Options adjust a connection.
type Options struct {
	// Interceptors run on every unary call, first listed outermost: the
	// caller's resilience policy.
	Interceptors []grpc.UnaryClientInterceptor
	// StatsHandler observes every call at the transport, after the
	// interceptors: the tracing's client handler. Nil installs none.
	StatsHandler stats.Handler
	// ConnectTimeout, when set, is asked on every connection attempt for
	// the bound on it (connect.go); zero, or a nil func, leaves gRPC's
	// default.
	ConnectTimeout func() time.Duration
}

// Conn opens a client connection to target (host:port) and starts
// connecting at once in the background, so the first request does not pay
// for the handshake. A dependency that is not up yet is retried with
// backoff, so services can start in any order. Traffic is plaintext: Mercado runs on loopback or a private
// network; put TLS in front of it before exposing it anywhere else.
func Conn(target string, o Options) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes), grpc.MaxCallSendMsgSize(maxMessageBytes)),
		grpc.WithChainUnaryInterceptor(o.Interceptors...),
		grpc.WithStaticStreamWindowSize(streamWindowBytes),
		grpc.WithStaticConnWindowSize(connWindowBytes),
	}
	if o.ConnectTimeout != nil {
		opts = append(opts, grpc.WithContextDialer(connectDialer(o.ConnectTimeout)))
	}
	if o.StatsHandler != nil {
		opts = append(opts, grpc.WithStatsHandler(o.StatsHandler))
	}
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", target, err)
	}
	cc.Connect()
	return cc, nil
}
