package faults_test

import (
	"slices"
	"testing"

	"github.com/mercado-lab/mercado/internal/faults"
)

// The one list of the shop's services: the five, edge first, each with
// work to simulate.
func TestServices(t *testing.T) {
	want := []string{"gateway", "orders", "catalog", "payments", "shipping"}
	if got := faults.Services(); !slices.Equal(got, want) {
		t.Errorf("Services() = %q, want %q", got, want)
	}
	for _, svc := range faults.Services() {
		if len(faults.Methods(svc)) == 0 {
			t.Errorf("%s simulates no method", svc)
		}
	}
	faults.Services()[0] = "changed"
	if faults.Services()[0] != "gateway" {
		t.Error("a caller changed the list for everyone")
	}
	if got, want := faults.ServiceList(), "gateway, orders, catalog, payments or shipping"; got != want {
		t.Errorf("ServiceList() = %q, want %q", got, want)
	}
}
