// Package dial opens Mercado's gRPC client connections.
package dial

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// maxMessageBytes matches the servers' limit.
const maxMessageBytes = 1 << 20

// Conn opens a client connection to target (host:port) and starts
// connecting at once in the background, so the first request does not pay
// for the handshake. A dependency that is not up yet is retried with
// backoff, so services can start in any order. Traffic is plaintext: Mercado runs on loopback or a private
// network; put TLS in front of it before exposing it anywhere else.
func Conn(target string, interceptors ...grpc.UnaryClientInterceptor) (*grpc.ClientConn, error) {
	cc, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes), grpc.MaxCallSendMsgSize(maxMessageBytes)),
		grpc.WithChainUnaryInterceptor(interceptors...),
	)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", target, err)
	}
	cc.Connect()
	return cc, nil
}
