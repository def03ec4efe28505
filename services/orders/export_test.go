package orders

import ordersv1 "github.com/mercado-lab/mercado/proto/orders/v1"

// GRPCServer exposes the gRPC adapter to the package's external tests, so
// they can check the status each refusal is sent back with.
func GRPCServer(s *Service) ordersv1.OrdersServiceServer { return grpcServer{svc: s} }

// StatusToProto exposes the mapping of an order's status to the wire's.
var StatusToProto = statusToProto

// ViewGraph exposes the admin view of the criticality table.
var ViewGraph = graphView
