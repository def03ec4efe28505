package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// Seed is the small catalogue every new store starts with.
func Seed() []Product {
	return []Product{
		{SKU: "tea-sencha", Name: "Sencha green tea, 100 g", PriceCents: 1250, Stock: 1_000_000},
		{SKU: "coffee-arabica", Name: "Arabica coffee beans, 250 g", PriceCents: 1490, Stock: 1_000_000},
		{SKU: "mug-stoneware", Name: "Stoneware mug", PriceCents: 1800, Stock: 1_000_000},
		{SKU: "kettle-gooseneck", Name: "Gooseneck kettle", PriceCents: 5400, Stock: 1_000_000},
		{SKU: "grinder-burr", Name: "Hand burr grinder", PriceCents: 7900, Stock: 1_000_000},
		{SKU: "filter-paper", Name: "Paper filters, 100 pack", PriceCents: 450, Stock: 10},
	}
}

// MemStore is the in-memory Store of the embedded default.
type MemStore struct {
	mu           sync.Mutex
	products     map[string]Product
	reservations map[string]Reservation
	byOrder      map[string]string
	released     map[string]bool
	nextID       int
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns a store holding products.
func NewMemStore(products []Product) *MemStore {
	s := &MemStore{products: map[string]Product{}, reservations: map[string]Reservation{},
		byOrder: map[string]string{}, released: map[string]bool{}}
	for _, p := range products {
		s.products[p.SKU] = p
	}
	return s
}

// List implements Store.
func (s *MemStore) List(ctx context.Context) ([]Product, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Product, 0, len(s.products))
	for _, p := range s.products {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Product) int { return strings.Compare(a.SKU, b.SKU) })
	return out, nil
}

// Get implements Store.
func (s *MemStore) Get(ctx context.Context, sku string) (Product, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.products[sku]
	if !ok {
		return Product{}, apperr.New(apperr.NotFound, "unknown sku %q", sku)
	}
	return p, nil
}

// Reserve implements Store.
func (s *MemStore) Reserve(ctx context.Context, orderID string, lines []Line) (Reservation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.byOrder[orderID]; ok {
		return s.reservations[id], nil // one reservation per order: a retry gets it back
	}
	want := map[string]int64{}
	for _, l := range lines {
		p, ok := s.products[l.SKU]
		if !ok {
			return Reservation{}, apperr.New(apperr.NotFound, "unknown sku %q", l.SKU)
		}
		want[l.SKU] += l.Qty
		if want[l.SKU] > p.Stock {
			return Reservation{}, apperr.New(apperr.Conflict, "out of stock: %q has %d left", l.SKU, p.Stock)
		}
	}
	s.nextID++
	r := Reservation{ID: fmt.Sprintf("res-%d", s.nextID), OrderID: orderID}
	for _, l := range lines {
		p := s.products[l.SKU]
		p.Stock -= l.Qty
		s.products[l.SKU] = p
		r.Lines = append(r.Lines, PricedLine{Line: l, UnitPriceCents: p.PriceCents})
		r.TotalCents += l.Qty * p.PriceCents
	}
	s.reservations[r.ID] = r
	s.byOrder[orderID] = r.ID
	return r, nil
}

// Release implements Store.
func (s *MemStore) Release(ctx context.Context, reservationID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.reservations[reservationID]
	if !ok {
		return apperr.New(apperr.NotFound, "unknown reservation %q", reservationID)
	}
	if s.released[reservationID] {
		return nil
	}
	s.released[reservationID] = true
	for _, l := range r.Lines {
		p := s.products[l.SKU]
		p.Stock += l.Qty
		s.products[l.SKU] = p
	}
	return nil
}
