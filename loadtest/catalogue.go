package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Basket is what a scenario's checkouts buy: which products, by a
// popularity curve over the shop's catalogue, and how many a checkout.
type Basket struct {
	// Popularity is how checkouts choose among the products in stock, in
	// the order the shop lists them (rank 1 first): PopularityZipf (the
	// default), PopularityUniform, or PopularityOne, every checkout the
	// first product listed (a flash sale).
	Popularity string `yaml:"popularity" json:"popularity,omitempty"`
	// Exponent is Zipf's: rank k is bought in proportion to k^-Exponent.
	// Above 1; 1.1 when left out.
	Exponent float64 `yaml:"exponent" json:"exponent,omitempty"`
	// Items is how many different products a checkout buys, one of each:
	// 1 to MaxItems, 1 when left out; 1 with PopularityOne.
	Items int `yaml:"items" json:"items,omitempty"`
}

// The popularity curves a Basket may name.
const (
	PopularityZipf    = "zipf"
	PopularityUniform = "uniform"
	PopularityOne     = "one"
)

// MaxItems is the most products a checkout may buy (the gateway's limit
// of lines an order).
const MaxItems = 50

// DefaultExponent is Zipf's exponent when a scenario gives none: the
// first product takes about a fifth of the checkouts of a catalogue of
// hundreds, the tenth about 1.6%.
const DefaultExponent = 1.1

// withDefaults fills what b leaves out.
func (b Basket) withDefaults() Basket {
	if b.Popularity == "" {
		b.Popularity = PopularityZipf
	}
	if b.Exponent == 0 && b.Popularity == PopularityZipf {
		b.Exponent = DefaultExponent
	}
	if b.Items == 0 {
		b.Items = 1
	}
	return b
}

// Validate reports every problem with b.
func (b Basket) Validate() []error {
	var errs []error
	switch b.Popularity {
	case "", PopularityZipf:
		if b.Exponent != 0 && !(b.Exponent > 1 && b.Exponent <= 10) {
			errs = append(errs, fmt.Errorf("checkout.exponent: %v is outside (1, 10] (Zipf's exponent must be above 1)", b.Exponent))
		}
	case PopularityUniform, PopularityOne:
		if b.Exponent != 0 {
			errs = append(errs, fmt.Errorf("checkout.exponent applies to zipf only, not %s", b.Popularity))
		}
	default:
		errs = append(errs, fmt.Errorf("checkout.popularity: unknown %q (want %s, %s or %s)", b.Popularity, PopularityZipf, PopularityUniform, PopularityOne))
	}
	if b.Items < 0 || b.Items > MaxItems {
		errs = append(errs, fmt.Errorf("checkout.items: %d is outside 1 to %d", b.Items, MaxItems))
	}
	if b.Popularity == PopularityOne && b.Items > 1 {
		errs = append(errs, errors.New("checkout.items: a checkout of popularity one buys one product"))
	}
	return errs
}

// String is b in words: "zipf 1.1", "uniform, 3 items", "one".
func (b Basket) String() string {
	b = b.withDefaults()
	s := b.Popularity
	if b.Popularity == PopularityZipf {
		s += " " + strconv.FormatFloat(b.Exponent, 'g', -1, 64)
	}
	if b.Items > 1 {
		s += fmt.Sprintf(", %d items", b.Items)
	}
	return s
}

// Catalogue is the shop's catalogue as the load sees it: the SKUs of the
// products in stock, in the order the shop lists them, and the page
// tokens that page through the listing, BrowsePageSize a page.
type Catalogue struct {
	SKUs  []string
	Pages []string // the first page's token is ""
}

// BrowsePageSize is how many products a page the browse class reads holds.
const BrowsePageSize = 20

// inStock is the least stock of a product the load buys: one with less
// is about to sell out (the seed's paper filters, kept at 10 for a lesson
// on selling out), and a checkout of it would measure its refusal.
const inStock = 1000

// ReadCatalogue pages through the shop's GET /api/products.
func ReadCatalogue(ctx context.Context, base string) (Catalogue, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	var c Catalogue
	token := ""
	for page := 0; ; page++ {
		if page == 1000 {
			return Catalogue{}, errors.New("reading the catalogue: more than 1000 pages")
		}
		c.Pages = append(c.Pages, token)
		p, err := readPage(ctx, client, base, token)
		if err != nil {
			return Catalogue{}, fmt.Errorf("reading the catalogue (GET /api/products, page %d): %w", page+1, err)
		}
		for _, pr := range p.Products {
			if pr.Stock >= inStock {
				c.SKUs = append(c.SKUs, pr.SKU)
			}
		}
		if token = p.NextPageToken; token == "" {
			break
		}
	}
	if len(c.SKUs) == 0 {
		return Catalogue{}, fmt.Errorf("the shop lists no product with %d or more in stock to buy", inStock)
	}
	return c, nil
}

type productPage struct {
	Products []struct {
		SKU   string `json:"sku"`
		Stock int64  `json:"stock"`
	} `json:"products"`
	NextPageToken string `json:"next_page_token"`
}

func readPage(ctx context.Context, client *http.Client, base, token string) (productPage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, browseURL(base, token), nil)
	if err != nil {
		return productPage{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return productPage{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return productPage{}, fmt.Errorf("status %s", resp.Status)
	}
	var p productPage
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		return productPage{}, err
	}
	return p, nil
}

func browseURL(base, token string) string {
	u := base + "/api/products?page_size=" + strconv.Itoa(BrowsePageSize)
	if token != "" {
		u += "&page_token=" + url.QueryEscape(token)
	}
	return u
}

// BrowseRequest reads the seq-th page of the catalogue, round and round.
func (c Catalogue) BrowseRequest(base string, seq uint64) vegeta.Target {
	return vegeta.Target{Method: http.MethodGet, URL: browseURL(base, c.Pages[seq%uint64(len(c.Pages))])}
}

// Pick returns the SKUs the seq-th checkout under keyPrefix buys. The
// same keyPrefix and seq always pick the same, so a run can be replayed
// and a retried checkout (the same Idempotency-Key) buys what it did.
func (c Catalogue) Pick(b Basket, keyPrefix string, seq uint64) []string {
	b = b.withDefaults()
	n := len(c.SKUs)
	items := min(b.Items, n)
	if b.Popularity == PopularityOne {
		return c.SKUs[:1]
	}
	h := fnv.New64a()
	h.Write([]byte(keyPrefix))
	rng := rand.New(rand.NewPCG(h.Sum64(), seq))
	draw := func() int { return rng.IntN(n) }
	if b.Popularity == PopularityZipf {
		z := rand.NewZipf(rng, b.Exponent, 1, uint64(n-1))
		draw = func() int { return int(z.Uint64()) }
	}
	out := make([]string, 0, items)
	taken := map[int]bool{}
	// A popular product comes up again and again; past a few draws per
	// item, the rest are the most popular not taken yet.
	for tries := 0; len(out) < items && tries < 20*items; tries++ {
		if i := draw(); !taken[i] {
			taken[i] = true
			out = append(out, c.SKUs[i])
		}
	}
	for i := 0; len(out) < items; i++ {
		if !taken[i] {
			taken[i] = true
			out = append(out, c.SKUs[i])
		}
	}
	return out
}
