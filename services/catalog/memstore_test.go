package catalog_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/services/catalog"
)

// The memory store's tests are the Store contract, in storetest_test.go,
// which runs them against PostgreSQL too. Here are the helpers they and
// the service's tests share.

// products is a small catalogue for store tests: plenty of tea, a little
// paper.
func products() []catalog.Product {
	return []catalog.Product{
		{SKU: "tea", Name: "Tea", PriceCents: 1250, Stock: 1000},
		{SKU: "paper", Name: "Paper", PriceCents: 450, Stock: 10},
	}
}

// codeOf returns the apperr code of err, or "" when it has none.
func codeOf(err error) apperr.Code {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func stock(t *testing.T, s catalog.Store, sku string) int64 {
	t.Helper()
	p, err := s.Get(context.Background(), sku)
	if err != nil {
		t.Fatalf("Get(%q): %v", sku, err)
	}
	return p.Stock
}
