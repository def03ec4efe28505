package loadtest

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// oneProduct is a catalogue of one product, for tests whose shop is a
// stand-in that lists none.
var oneProduct = fixtures{orderID: "none", cat: Catalogue{SKUs: []string{"coffee-arabica"}, Pages: []string{""}}}

func catalogueOf(n int) Catalogue {
	c := Catalogue{Pages: []string{""}}
	for i := range n {
		c.SKUs = append(c.SKUs, fmt.Sprintf("p-%04d", i))
	}
	return c
}

// shares counts how often each SKU is picked over draws checkouts.
func shares(c Catalogue, b Basket, draws int) map[string]float64 {
	got := map[string]float64{}
	for seq := range uint64(draws) {
		for _, sku := range c.Pick(b, "k", seq) {
			got[sku] += 1 / float64(draws)
		}
	}
	return got
}

func TestPickFollowsZipf(t *testing.T) {
	c := catalogueOf(600)
	const draws = 40_000
	got := shares(c, Basket{}, draws)
	// Rank k's share is k^-s over the sum of every rank's.
	var sum float64
	for k := 1; k <= len(c.SKUs); k++ {
		sum += math.Pow(float64(k), -DefaultExponent)
	}
	for _, rank := range []int{1, 2, 10, 100} {
		want := math.Pow(float64(rank), -DefaultExponent) / sum
		// Four standard deviations of a binomial share.
		tol := 4 * math.Sqrt(want*(1-want)/draws)
		if share := got[c.SKUs[rank-1]]; math.Abs(share-want) > tol {
			t.Errorf("rank %d bought in %.4f of checkouts, want %.4f ± %.4f", rank, share, want, tol)
		}
	}
	if got[c.SKUs[0]] < 0.15 {
		t.Errorf("the first product takes %.3f of the checkouts; Zipf 1.1 over 600 gives it about a fifth", got[c.SKUs[0]])
	}
}

func TestPickUniformAndOne(t *testing.T) {
	c := catalogueOf(50)
	const draws = 20_000
	for sku, share := range shares(c, Basket{Popularity: PopularityUniform}, draws) {
		if math.Abs(share-1.0/50) > 4*math.Sqrt(0.02*0.98/draws) {
			t.Errorf("uniform: %s bought in %.4f of checkouts, want 0.02", sku, share)
		}
	}
	got := shares(c, Basket{Popularity: PopularityOne}, 1000)
	if len(got) != 1 || got[c.SKUs[0]] < 0.999 {
		t.Errorf("one: bought %v, want the first product every time", got)
	}
}

func TestPickItemsAreDistinctAndRepeatable(t *testing.T) {
	c := catalogueOf(600)
	b := Basket{Items: 3}
	seen := map[string]bool{}
	for seq := range uint64(200) {
		skus := c.Pick(b, "k", seq)
		if len(skus) != 3 || len(slices.Compact(slices.Sorted(slices.Values(skus)))) != 3 {
			t.Fatalf("Pick(items 3) = %v, want three different products", skus)
		}
		if again := c.Pick(b, "k", seq); !slices.Equal(again, skus) {
			t.Fatalf("Pick is not repeatable: %v then %v", skus, again)
		}
		seen[strings.Join(skus, ",")] = true
	}
	if len(seen) < 150 {
		t.Errorf("200 checkouts made %d different baskets; want them to vary", len(seen))
	}
	// More items than products: every product once.
	if got := catalogueOf(2).Pick(Basket{Items: 5}, "k", 1); len(got) != 2 {
		t.Errorf("Pick(items 5) of 2 products = %v, want both", got)
	}
	if a, b := c.Pick(Basket{}, "a", 1), c.Pick(Basket{}, "b", 1); slices.Equal(a, b) && slices.Equal(c.Pick(Basket{}, "a", 2), c.Pick(Basket{}, "b", 2)) &&
		slices.Equal(c.Pick(Basket{}, "a", 3), c.Pick(Basket{}, "b", 3)) {
		t.Errorf("two key prefixes pick the same products: %v", a)
	}
}

func TestBasketValidate(t *testing.T) {
	for _, tt := range []struct {
		b    Basket
		want string // "" for valid
	}{
		{Basket{}, ""},
		{Basket{Popularity: "zipf", Exponent: 1.5, Items: 3}, ""},
		{Basket{Popularity: "one"}, ""},
		{Basket{Popularity: "zipf", Exponent: 1}, "above 1"},
		{Basket{Popularity: "uniform", Exponent: 2}, "zipf only"},
		{Basket{Popularity: "hot"}, `unknown "hot"`},
		{Basket{Items: 51}, "outside 1 to 50"},
		{Basket{Popularity: "one", Items: 2}, "buys one product"},
	} {
		err := strings.Join(func() []string {
			var s []string
			for _, e := range tt.b.Validate() {
				s = append(s, e.Error())
			}
			return s
		}(), "; ")
		if tt.want == "" && err != "" || !strings.Contains(err, tt.want) {
			t.Errorf("%+v: Validate() = %q, want %q", tt.b, err, tt.want)
		}
	}
}

// TestReadCatalogue reads a listing of 45 products, 20 a page, whose
// third product is about to sell out.
func TestReadCatalogue(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RawQuery)
		after := r.URL.Query().Get("page_token")
		var items []string
		next := ""
		for i := range 45 {
			sku := fmt.Sprintf("p-%02d", i)
			if sku <= after {
				continue
			}
			if len(items) == BrowsePageSize {
				next = fmt.Sprintf("p-%02d", i-1)
				break
			}
			stock := 1_000_000
			if i == 2 {
				stock = 10
			}
			items = append(items, fmt.Sprintf(`{"sku":%q,"stock":%d}`, sku, stock))
		}
		fmt.Fprintf(w, `{"products":[%s],"next_page_token":%q}`, strings.Join(items, ","), next)
	}))
	defer srv.Close()
	c, err := ReadCatalogue(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.SKUs) != 44 || slices.Contains(c.SKUs, "p-02") || c.SKUs[0] != "p-00" {
		t.Errorf("SKUs = %v, want the 44 in stock, in order", c.SKUs)
	}
	if want := []string{"", "p-19", "p-39"}; !slices.Equal(c.Pages, want) {
		t.Errorf("page tokens = %q, want %q", c.Pages, want)
	}
	if want := "page_size=20&page_token=p-19"; asked[1] != want {
		t.Errorf("second page asked with %q, want %q", asked[1], want)
	}
	if got := c.BrowseRequest("http://shop", 4).URL; got != "http://shop/api/products?page_size=20&page_token=p-19" {
		t.Errorf("the fifth browse reads %s, want the second page", got)
	}

	bad := httptest.NewServer(http.NotFoundHandler())
	defer bad.Close()
	if _, err := ReadCatalogue(context.Background(), bad.URL); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("ReadCatalogue of a shop that lists nothing: %v, want the status", err)
	}
}

// withListing is a stand-in shop that lists one product in stock and
// answers everything else with h.
func withListing(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/api/products" {
			fmt.Fprint(w, `{"products":[{"sku":"coffee-arabica","stock":1000000}]}`)
			return
		}
		h(w, r)
	})
}
