package gateway

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/pkg/deadline"
	"github.com/mercado-lab/mercado/pkg/resilience/breaker"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
)

// The catalogue export, GET /api/catalog/export: the shop's batch
// workload. It walks the whole catalogue page by page through catalog's
// ExportCatalog, each page a call of its own, and is meant to be sent as
// batch traffic (X-Request-Class: batch): a budget of minutes, and the
// first work a full pool refuses. A page refused that way (catalog's
// workers, or the gateway's bulkhead to catalog, already hold batch's
// share), refused by batch's own circuit breaker to catalog, or timed out
// on the gateway's cap to catalog, is asked for again after a jittered
// backoff, for as long as the request's budget lasts: a batch job waits
// for the capacity shoppers leave it, instead of failing.

// Paging, as catalog pages: the page size a client may ask for, and the
// size a client that asks for none gets.
const (
	maxPageSize     = 100
	defaultPageSize = 50
)

// The backoff after a refused export page, from exportBackoffMin doubling
// to exportBackoffMax (full jitter, so exports refused together do not
// come back together).
const (
	exportBackoffMin = 50 * time.Millisecond
	exportBackoffMax = time.Second
)

// Export is the answer to GET /api/catalog/export.
type Export struct {
	Products []Product `json:"products"`
	// Pages is how many pages the export read; Refused how many times a
	// page was turned away (askAgain) and asked for again.
	Pages   int    `json:"pages"`
	Refused int    `json:"refused"`
	Class   string `json:"class"`
}

func (s *server) exportCatalog(w http.ResponseWriter, r *http.Request) {
	size, _, err := pageQuery(r, false)
	if err != nil {
		problem.Write(w, r, http.StatusBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	out := Export{Products: []Product{}, Class: string(deadline.ClassOf(ctx))}
	token := ""
	for {
		page, refused, err := s.exportPage(ctx, size, token)
		out.Refused += refused
		if err != nil {
			writeUpstreamError(w, r, err, nil)
			return
		}
		out.Pages++
		for _, p := range page.GetProducts() {
			out.Products = append(out.Products, productFromProto(p))
		}
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// exportPage reads one page, asking again after a backoff while the page
// is turned away (askAgain) and the budget leaves time for another try.
// It returns how often it was turned away.
func (s *server) exportPage(ctx context.Context, size int, token string) (*catalogv1.ExportCatalogResponse, int, error) {
	backoff := exportBackoffMin
	for refused := 0; ; refused++ {
		page, err := s.catalog.ExportCatalog(ctx, &catalogv1.ExportCatalogRequest{PageSize: int32(size), PageToken: token})
		if !askAgain(err) {
			return page, refused, err
		}
		wait := time.Duration(rand.Int64N(int64(backoff)) + 1)
		if rem, ok := deadline.Remaining(ctx); ok && rem <= wait {
			return nil, refused + 1, err
		}
		select {
		case <-ctx.Done():
			return nil, refused + 1, err
		case <-time.After(wait):
		}
		backoff = min(2*backoff, exportBackoffMax)
	}
}

// askAgain reports whether a page is worth asking for again: it was
// refused before any work, for want of capacity (ResourceExhausted) or by
// batch's breaker to catalog while it is open, or it timed out on the
// gateway's cap to catalog, as a page does when the machine is busy. A
// page is a read, so asking again changes nothing, and batch's own breaker
// opens when its pages keep timing out: the asking never piles onto a slow
// catalog, and never touches the breaker shoppers' calls pass.
func askAgain(err error) bool {
	return apperr.GRPCCode(err) == codes.ResourceExhausted ||
		errors.Is(err, breaker.ErrOpen) ||
		errors.Is(err, deadline.ErrCallTimeout)
}

// pageQuery reads a paged read's query parameters: page_size, 1 to 100
// (50 when absent), and, where the route takes one, page_token (at most
// MaxIDBytes, as every identifier). Any other parameter is refused, so
// that a typo is not silently ignored.
func pageQuery(r *http.Request, takesToken bool) (size int, token string, err error) {
	q := r.URL.Query()
	takes := "page_size"
	if takesToken {
		takes = "page_size and page_token"
	}
	for k := range q {
		if k != "page_size" && (k != "page_token" || !takesToken) {
			return 0, "", fmt.Errorf("unknown query parameter %q (this route takes %s)", truncate(k, 32), takes)
		}
		if len(q[k]) > 1 {
			return 0, "", fmt.Errorf("%s is given %d times; give it once", k, len(q[k]))
		}
	}
	size = defaultPageSize
	if v := q.Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return 0, "", fmt.Errorf("page_size must be one whole number from 1 to %d, got %q", maxPageSize, truncate(v, 32))
		}
		size = n
	}
	token = q.Get("page_token")
	if err := checkID("page_token", token); token != "" && err != nil {
		return 0, "", err
	}
	return size, token, nil
}
