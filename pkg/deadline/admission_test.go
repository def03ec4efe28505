package deadline_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

func TestPolicyAdmit(t *testing.T) {
	tests := []struct {
		name       string
		policy     deadline.Policy
		left       time.Duration // zero: no deadline
		wantReason string        // empty: admitted
		wantMsg    string
	}{
		{name: "admission off admits a spent budget", policy: deadline.Policy{Floor: time.Second}, left: -time.Second},
		{name: "no deadline is admitted", policy: deadline.Policy{Admission: true, Floor: time.Second}},
		{name: "enough left", policy: deadline.Policy{Admission: true, Floor: 50 * ms}, left: 200 * ms},
		{name: "exactly the floor", policy: deadline.Policy{Admission: true, Floor: 50 * ms}, left: 50 * ms},
		{
			name: "below the floor", policy: deadline.Policy{Admission: true, Floor: 50 * ms}, left: 30 * ms,
			wantReason: deadline.ReasonBelowFloor, wantMsg: "only 30ms of budget left, below the 50ms floor",
		},
		{
			name: "expired", policy: deadline.Policy{Admission: true, Floor: 50 * ms}, left: -10 * ms,
			wantReason: deadline.ReasonExpired, wantMsg: "deadline expired before the work started",
		},
		{
			name: "expired without a floor", policy: deadline.Policy{Admission: true}, left: -10 * ms,
			wantReason: deadline.ReasonExpired, wantMsg: "deadline expired before the work started",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.left != 0 {
					ctx = withLeft(t, tt.left)
				}
				err := tt.policy.Admit(ctx)
				if tt.wantReason == "" {
					// Compared to a plain nil: a typed nil pointer in the
					// interface would fail here.
					if err != nil {
						t.Errorf("Admit() = %v; want nil", err)
					}
					return
				}
				var aerr *deadline.AdmissionError
				if !errors.As(err, &aerr) {
					t.Fatalf("Admit() = %v; want an *AdmissionError", err)
				}
				if aerr.Reason() != tt.wantReason || aerr.Error() != tt.wantMsg {
					t.Errorf("Admit() = %q (reason %q); want %q (reason %q)", aerr.Error(), aerr.Reason(), tt.wantMsg, tt.wantReason)
				}
				if !errors.Is(err, deadline.ErrInsufficientBudget) {
					t.Errorf("Admit() = %v; want it to match ErrInsufficientBudget", err)
				}
			})
		})
	}
}

// The server interceptor called directly, in a bubble, where the clock
// stands still and every figure is exact.
func TestUnaryServerInterceptorDirect(t *testing.T) {
	tests := []struct {
		name       string
		policy     deadline.Policy
		left       time.Duration // zero: no deadline
		clientMD   []string      // x-client-deadline-ms values sent; nil: none
		work       time.Duration
		wantReject string // reason; empty: admitted
		wantMsg    string // the rejection's status message
		wantClient time.Duration
		wantHasCD  bool
		wantLate   time.Duration // zero: OnLate must not run
	}{
		{
			name: "expired", policy: deadline.Policy{Admission: true, Floor: 50 * ms}, left: -10 * ms,
			wantReject: deadline.ReasonExpired, wantMsg: "deadline expired before the work started",
		},
		{
			name: "below floor", policy: deadline.Policy{Admission: true, Floor: 50 * ms}, left: 30 * ms,
			wantReject: deadline.ReasonBelowFloor, wantMsg: "only 30ms of budget left, below the 50ms floor",
		},
		{
			name: "admitted, late by the client's clock", policy: deadline.Policy{Admission: true, Floor: 50 * ms}, left: time.Second,
			clientMD: []string{"250"}, work: 400 * ms, wantClient: 250 * ms, wantHasCD: true, wantLate: 150 * ms,
		},
		{name: "finishing exactly at the client deadline is not late", clientMD: []string{"250"}, work: 250 * ms, wantClient: 250 * ms, wantHasCD: true},
		{name: "client already gone on arrival", clientMD: []string{"0"}, work: ms, wantHasCD: true, wantLate: ms},
		{name: "first value counts", clientMD: []string{"100", "900"}, wantClient: 100 * ms, wantHasCD: true},
		{name: "garbage is ignored", clientMD: []string{"abc"}, work: time.Second},
		{name: "negative is ignored", clientMD: []string{"-5"}, work: time.Second},
		{name: "empty is ignored", clientMD: []string{""}, work: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var arrivals recorder[deadline.ArrivalInfo]
				var lates recorder[deadline.LateInfo]
				intercept := deadline.UnaryServerInterceptor(deadline.ServerOptions{
					Policy: func(context.Context) deadline.Policy { return tt.policy },
					Hooks:  deadline.Hooks{OnArrival: arrivals.hook, OnLate: lates.hook},
				})
				ctx := context.Background()
				if tt.left != 0 {
					ctx = withLeft(t, tt.left)
				}
				md := metadata.MD{}
				for _, v := range tt.clientMD {
					md.Append("x-client-deadline-ms", v)
				}
				ctx = metadata.NewIncomingContext(ctx, md)

				var handled bool
				var cd time.Time
				var hasCD bool
				handler := func(ctx context.Context, req any) (any, error) {
					handled = true
					cd, hasCD = deadline.ClientDeadline(ctx)
					time.Sleep(tt.work)
					return req, nil
				}
				resp, err := intercept(ctx, "ping", &grpc.UnaryServerInfo{FullMethod: "/test/Direct"}, handler)

				a := arrivals.one(t)
				wantArrival := deadline.ArrivalInfo{
					Method: "/test/Direct", Class: deadline.Interactive, HasBudget: tt.left != 0, Remaining: tt.left,
					Rejected: tt.wantReject != "", Reason: tt.wantReject,
				}
				if a != wantArrival {
					t.Errorf("OnArrival got %+v; want %+v", a, wantArrival)
				}
				if tt.wantReject != "" {
					if handled || resp != nil {
						t.Error("handler ran for a rejected request")
					}
					if s, _ := status.FromError(err); s.Code() != codes.DeadlineExceeded || s.Message() != tt.wantMsg {
						t.Errorf("err = %v; want DeadlineExceeded %q", err, tt.wantMsg)
					}
					return
				}
				if err != nil || resp != "ping" {
					t.Fatalf("interceptor returned %v, %v; want the handler's answer", resp, err)
				}
				if hasCD != tt.wantHasCD || (hasCD && cd.Sub(time.Now().Add(-tt.work)) != tt.wantClient) {
					t.Errorf("handler saw client deadline %v (present %v); want %v after arrival (present %v)",
						cd, hasCD, tt.wantClient, tt.wantHasCD)
				}
				got := lates.all()
				switch {
				case tt.wantLate == 0 && len(got) != 0:
					t.Errorf("OnLate got %+v; want no call", got)
				case tt.wantLate != 0 && (len(got) != 1 || got[0] != deadline.LateInfo{Method: "/test/Direct", Late: tt.wantLate}):
					t.Errorf("OnLate got %+v; want one with Late %v", got, tt.wantLate)
				}
			})
		})
	}
}
