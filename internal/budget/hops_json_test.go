package budget

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

// Hops read in one process reach another whole: the histogram with its
// +Inf bucket, which encoding/json alone refuses, and every other field.
func TestHopsRoundTripThroughJSON(t *testing.T) {
	hist := histogram([]float64{0.005, 0.1, math.Inf(1)}, []uint64{90, 99, 100})
	want := Hops{Budget: 800 * time.Millisecond, Calls: []HopObservation{
		{From: "orders", To: "shipping", Callee: "shipping", Setting: "--shipping-cap", Cap: 300 * time.Millisecond,
			Floor: 20 * time.Millisecond, Criticality: "critical", Stage: 2, Parallel: true, Route: "checkout",
			Method: "/shipping.v1.ShippingService/CreateShipment", Durations: hist, TimedOut: 3},
		{From: "orders", To: "fraud", Callee: "payments", Setting: "--fraud-cap"}, // no calls yet: no histogram
	}}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got Hops
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if len(got.Calls) != len(want.Calls) {
		t.Fatalf("%d calls arrived, want %d:\n%s", len(got.Calls), len(want.Calls), b)
	}
	if !proto.Equal(got.Calls[0].Durations, hist) {
		t.Errorf("the histogram arrived as %v, want %v", got.Calls[0].Durations, hist)
	}
	if got.Calls[1].Durations != nil {
		t.Errorf("a call with no histogram arrived with %v", got.Calls[1].Durations)
	}
	if q := Quantile(0.99, got.Calls[0].Durations); q != 100*time.Millisecond {
		t.Errorf("the arrived histogram's p99 is %v, want 100ms", q)
	}
	got.Calls[0].Durations, want.Calls[0].Durations = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("arrived\n%+v\nwant\n%+v", got, want)
	}
}
