package faults_test

import (
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/sim"
)

func TestCheckMethod(t *testing.T) {
	for _, tc := range []struct {
		name, service, method string
		want                  string // the whole error; empty for none
	}{
		{"a real method", "catalog", sim.CatalogReserveStock, ""},
		{"every method", "shipping", faults.AllMethods, ""},
		{"each service's own", "payments", sim.PaymentsCreateCharge, ""},
		{"an unknown method names the valid ones", "catalog", "NoSuchMethod",
			`unknown method "NoSuchMethod" for catalog (want ListProducts, GetProduct, ReserveStock, ReleaseStock, ExportCatalog, Commit or *)`},
		{"another service's method", "catalog", sim.PaymentsCreateCharge,
			`unknown method "CreateCharge" for catalog (want ListProducts, GetProduct, ReserveStock, ReleaseStock, ExportCatalog, Commit or *)`},
		{"the wrong case points at the real name", "catalog", "reservestock",
			`unknown method "reservestock" for catalog: names are case-sensitive, did you mean ReserveStock? (want ListProducts, GetProduct, ReserveStock, ReleaseStock, ExportCatalog, Commit or *)`},
		{"an unknown service", "inventory", "ReserveStock",
			`unknown service "inventory" (want gateway, orders, catalog, payments or shipping)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := faults.CheckMethod(tc.service, tc.method)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckMethod(%q, %q) = %v, want nil", tc.service, tc.method, err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("CheckMethod(%q, %q) = %v,\nwant %s", tc.service, tc.method, err, tc.want)
			}
		})
	}
}

// Every service simulates some work, and the methods are told apart by
// more than case, across services too (a method's hop is named by the
// method alone).
func TestMethodsOfEveryService(t *testing.T) {
	seen := map[string]bool{}
	for _, svc := range []string{"gateway", "orders", "catalog", "payments", "shipping"} {
		ms := faults.Methods(svc)
		if len(ms) == 0 {
			t.Errorf("%s simulates no method", svc)
		}
		for _, m := range ms {
			if seen[strings.ToLower(m)] {
				t.Errorf("%s: %q is named as another method but for case", svc, m)
			}
			seen[strings.ToLower(m)] = true
		}
	}
}

func TestSetCheckMethods(t *testing.T) {
	ok := faults.Set{faults.AllMethods: {}, sim.CatalogReserveStock: {}, sim.CatalogGetProduct: {}}
	if err := ok.CheckMethods("catalog"); err != nil {
		t.Errorf("CheckMethods of catalog's own methods: %v", err)
	}
	bad := faults.Set{sim.CatalogReserveStock: {}, "Zzz": {}, "Aaa": {}}
	if err := bad.CheckMethods("catalog"); err == nil || !strings.Contains(err.Error(), `"Aaa"`) {
		t.Errorf("CheckMethods = %v, want the first unknown method by name, Aaa", err)
	}
}
