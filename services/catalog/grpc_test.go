package catalog_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/pkg/deadline"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
	"github.com/mercado-lab/mercado/services/catalog"
)

// startCatalog runs the catalog service the way `mercado serve catalog`
// does, on loopback ports, and returns a client for it.
func startCatalog(t *testing.T) catalogv1.CatalogServiceClient {
	t.Helper()
	cfg := catalog.DefaultConfig()
	cfg.Addr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	p, err := catalog.Start(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	cc, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		cancel()
		if err := p.Wait(); err != nil {
			t.Errorf("catalog stopped with %v", err)
		}
	})
	return catalogv1.NewCatalogServiceClient(cc)
}

func TestStartRejectsBadConfig(t *testing.T) {
	cfg := catalog.DefaultConfig()
	cfg.Addr, cfg.AdminAddr, cfg.Mode = "127.0.0.1:0", "127.0.0.1:0", "fast"
	p, err := catalog.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatalf("Start with mode %q succeeded (process %v)", cfg.Mode, p)
	}
}

func TestGRPC(t *testing.T) {
	c := startCatalog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("ListProducts", func(t *testing.T) {
		resp, err := c.ListProducts(ctx, &catalogv1.ListProductsRequest{PageSize: 100, PageToken: "tea-sencha"})
		if err != nil {
			t.Fatal(err)
		}
		// tin-001 to tin-059 follow tea-sencha, and nothing after them.
		if got := len(resp.GetProducts()); got != 59 || resp.GetProducts()[0].GetSku() != "tin-001" || resp.GetNextPageToken() != "" {
			t.Fatalf("ListProducts after tea-sencha returned %d products from %s, next %q; want the 59 tins, the last page",
				got, resp.GetProducts()[0].GetSku(), resp.GetNextPageToken())
		}
		for _, p := range resp.GetProducts() {
			if p.GetSku() == "" || p.GetName() == "" || p.GetPriceCents() <= 0 {
				t.Errorf("incomplete product %v", p)
			}
		}
	})
	t.Run("GetProduct", func(t *testing.T) {
		p, err := c.GetProduct(ctx, &catalogv1.GetProductRequest{Sku: "tea-sencha"})
		if err != nil {
			t.Fatal(err)
		}
		if p.GetSku() != "tea-sencha" || p.GetPriceCents() != 1250 || p.GetName() == "" {
			t.Errorf("GetProduct(tea-sencha) = %v", p)
		}
	})
	t.Run("ReserveStock then ReleaseStock", func(t *testing.T) {
		r, err := c.ReserveStock(ctx, &catalogv1.ReserveStockRequest{OrderId: "o1", Lines: []*catalogv1.Line{
			{Sku: "tea-sencha", Qty: 2}, {Sku: "mug-stoneware", Qty: 1},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if r.GetReservationId() == "" || r.GetOrderId() != "o1" || r.GetTotalCents() != 2*1250+1800 || len(r.GetLines()) != 2 {
			t.Errorf("ReserveStock = %v", r)
		}
		if l := r.GetLines()[0]; l.GetSku() != "tea-sencha" || l.GetQty() != 2 || l.GetUnitPriceCents() != 1250 {
			t.Errorf("first line = %v", l)
		}
		if _, err := c.ReleaseStock(ctx, &catalogv1.ReleaseStockRequest{ReservationId: r.GetReservationId()}); err != nil {
			t.Errorf("ReleaseStock: %v", err)
		}
	})

	// The adapter maps each domain error to its gRPC code.
	errs := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"GetProduct unknown sku", func() error {
			_, err := c.GetProduct(ctx, &catalogv1.GetProductRequest{Sku: "nope"})
			return err
		}, codes.NotFound},
		{"GetProduct without sku", func() error {
			_, err := c.GetProduct(ctx, &catalogv1.GetProductRequest{})
			return err
		}, codes.InvalidArgument},
		{"ReserveStock without lines", func() error {
			_, err := c.ReserveStock(ctx, &catalogv1.ReserveStockRequest{OrderId: "o2"})
			return err
		}, codes.InvalidArgument},
		{"ReserveStock qty 0", func() error {
			_, err := c.ReserveStock(ctx, &catalogv1.ReserveStockRequest{OrderId: "o2", Lines: []*catalogv1.Line{{Sku: "tea-sencha"}}})
			return err
		}, codes.InvalidArgument},
		{"ReserveStock unknown sku", func() error {
			_, err := c.ReserveStock(ctx, &catalogv1.ReserveStockRequest{OrderId: "o2", Lines: []*catalogv1.Line{{Sku: "nope", Qty: 1}}})
			return err
		}, codes.NotFound},
		{"ReserveStock out of stock", func() error {
			_, err := c.ReserveStock(ctx, &catalogv1.ReserveStockRequest{OrderId: "o2", Lines: []*catalogv1.Line{{Sku: "filter-paper", Qty: 11}}})
			return err
		}, codes.FailedPrecondition},
		{"ReleaseStock unknown reservation", func() error {
			_, err := c.ReleaseStock(ctx, &catalogv1.ReleaseStockRequest{ReservationId: "res-999"})
			return err
		}, codes.NotFound},
		{"ReleaseStock without id", func() error {
			_, err := c.ReleaseStock(ctx, &catalogv1.ReleaseStockRequest{})
			return err
		}, codes.InvalidArgument},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if got := status.Code(err); got != tt.want {
				t.Errorf("code = %v (%v), want %v", got, err, tt.want)
			}
		})
	}
}

// A direct gRPC call with a 60 s deadline to a budgeted catalog is cut to
// the interactive maximum (10 s): catalog's work ends there, and each
// clamp shows on /metrics.
func TestDirectCallWithALongDeadlineIsClamped(t *testing.T) {
	t.Parallel()
	cfg := catalog.DefaultConfig()
	cfg.Addr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	// An export page that never ends on its own: the call lasts as long
	// as the context catalog works under.
	cfg.Faults = faults.Set{sim.CatalogExportCatalog: {Hang: time.Hour}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := catalog.Start(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = p.Wait() }()
	cc, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	c := catalogv1.NewCatalogServiceClient(cc)

	call, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if _, err := c.ListProducts(call, &catalogv1.ListProductsRequest{}); err != nil {
		t.Fatal(err)
	}
	// The work ends when catalog's own context does: at the interactive
	// maximum, 10 s, not the client's 60 s.
	start := time.Now()
	_, err = c.ExportCatalog(call, &catalogv1.ExportCatalogRequest{})
	took := time.Since(start)
	if status.Code(err) != codes.DeadlineExceeded || took < deadline.DefaultMaxBudget-time.Second || took > 30*time.Second {
		t.Errorf("a hung page with a 60 s deadline ended after %v with %v; want DeadlineExceeded at about %v",
			took.Round(time.Millisecond), err, deadline.DefaultMaxBudget)
	}
	resp, err := http.Get("http://" + p.AdminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{
		`mercado_deadline_clamps_total{class="interactive",service="catalog"} 2`,
		`mercado_deadline_clamps_total{class="batch",service="catalog"} 0`,
	} {
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("catalog's /metrics lack %q", line)
		}
	}
}
