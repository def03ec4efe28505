package catalog

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// SeedSize is how many products Seed holds.
const SeedSize = 600

// Seed is the catalogue every new store starts with: six named products
// the docs and tests buy by name (paper filters with only 10 in stock, to
// sell out), and numbered ones (cup-001, dripper-001, …) that make it a
// catalogue of SeedSize for the load to spread over. Every SKU but
// coffee-arabica sorts after coffee-arabica, so it is the first product a
// listing shows.
func Seed() []Product {
	products := []Product{
		{SKU: "tea-sencha", Name: "Sencha green tea, 100 g", PriceCents: 1250, Stock: 1_000_000},
		{SKU: "coffee-arabica", Name: "Arabica coffee beans, 250 g", PriceCents: 1490, Stock: 1_000_000},
		{SKU: "mug-stoneware", Name: "Stoneware mug", PriceCents: 1800, Stock: 1_000_000},
		{SKU: "kettle-gooseneck", Name: "Gooseneck kettle", PriceCents: 5400, Stock: 1_000_000},
		{SKU: "grinder-burr", Name: "Hand burr grinder", PriceCents: 7900, Stock: 1_000_000},
		{SKU: "filter-paper", Name: "Paper filters, 100 pack", PriceCents: 450, Stock: 10},
	}
	kinds := []struct{ sku, name string }{
		{"cup", "Tasting cup"}, {"dripper", "Pour-over dripper"}, {"jar", "Storage jar"},
		{"kettle", "Stovetop kettle"}, {"mug", "Enamel mug"}, {"press", "French press"},
		{"scale", "Brewing scale"}, {"spoon", "Measuring spoon"}, {"tea", "Loose-leaf tea blend"},
		{"tin", "Tea tin"},
	}
	for i := range SeedSize - len(products) {
		k, n := kinds[i%len(kinds)], i/len(kinds)+1
		products = append(products, Product{
			SKU:        fmt.Sprintf("%s-%03d", k.sku, n),
			Name:       fmt.Sprintf("%s no. %d", k.name, n),
			PriceCents: 300 + int64(i*7919%9700), // spread from 3 to 100 currency units
			Stock:      1_000_000,
		})
	}
	return products
}

// MemStore is the in-memory Store of the embedded default.
type MemStore struct {
	mu           sync.Mutex
	products     map[string]Product
	skus         []string // every product's, sorted: the listing's order
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
	s.skus = slices.Sorted(maps.Keys(s.products))
	return s
}

// List implements Store.
func (s *MemStore) List(ctx context.Context, after string, limit int) ([]Product, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := slices.BinarySearch(s.skus, after)
	if found {
		i++
	}
	skus := s.skus[i:min(i+limit, len(s.skus))]
	out := make([]Product, len(skus))
	for j, sku := range skus {
		out[j] = s.products[sku]
	}
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
