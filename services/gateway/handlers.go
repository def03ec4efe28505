package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/jsonbody"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/internal/timing"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
	ordersv1 "github.com/mercado-lab/mercado/proto/orders/v1"
)

// Product is a product as the public API shows it.
type Product struct {
	SKU        string `json:"sku"`
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	Stock      int64  `json:"stock"`
}

// Item is one line of a checkout or an order.
type Item struct {
	SKU            string `json:"sku"`
	Qty            int64  `json:"qty"`
	UnitPriceCents int64  `json:"unit_price_cents,omitempty"`
}

// CheckoutRequest is the body of POST /api/checkout.
type CheckoutRequest struct {
	Customer string `json:"customer"`
	Items    []Item `json:"items"`
	Address  string `json:"address"`
}

// Order is an order as the public API shows it.
type Order struct {
	OrderID        string `json:"order_id"`
	Status         string `json:"status"`
	Customer       string `json:"customer"`
	Items          []Item `json:"items"`
	Address        string `json:"address"`
	TotalCents     int64  `json:"total_cents"`
	ChargeID       string `json:"charge_id,omitempty"`
	ShipmentID     string `json:"shipment_id,omitempty"`
	Failure        string `json:"failure,omitempty"`
	ShipmentStatus string `json:"shipment_status,omitempty"`
	// DeliveryEstimate is shipping's quote, or the default window when
	// the quote did not come in time; Degraded then names it.
	DeliveryEstimate *DeliveryEstimate `json:"delivery_estimate,omitempty"`
	Degraded         []string          `json:"degraded,omitempty"`
	CreatedAt        time.Time         `json:"created_at"`
}

// DeliveryEstimate is a window of business days from the order.
type DeliveryEstimate struct {
	MinBusinessDays int32 `json:"min_business_days"`
	MaxBusinessDays int32 `json:"max_business_days"`
}

func productFromProto(p *catalogv1.Product) Product {
	return Product{SKU: p.GetSku(), Name: p.GetName(), PriceCents: p.GetPriceCents(), Stock: p.GetStock()}
}

func orderFromProto(o *ordersv1.Order) Order {
	out := Order{
		OrderID: o.GetOrderId(), Status: statusText(o.GetStatus()), Customer: o.GetCustomer(), Address: o.GetAddress(),
		TotalCents: o.GetTotalCents(), ChargeID: o.GetChargeId(), ShipmentID: o.GetShipmentId(),
		Failure: o.GetFailure(), CreatedAt: time.UnixMilli(o.GetCreatedUnixMs()).UTC(), ShipmentStatus: shipmentStatusText(o.GetShipmentStatus()),
		Items: make([]Item, 0, len(o.GetItems())),
	}
	for _, it := range o.GetItems() {
		out.Items = append(out.Items, Item{SKU: it.GetSku(), Qty: it.GetQty(), UnitPriceCents: it.GetUnitPriceCents()})
	}
	if e := o.GetDeliveryEstimate(); e != nil {
		out.DeliveryEstimate = &DeliveryEstimate{MinBusinessDays: e.GetMinBusinessDays(), MaxBusinessDays: e.GetMaxBusinessDays()}
	}
	out.Degraded = o.GetDegraded()
	return out
}

// statusText is the one mapping from the wire's order status to the
// public API's (docs/api.md).
func statusText(s ordersv1.OrderStatus) string {
	switch s {
	case ordersv1.OrderStatus_ORDER_STATUS_PENDING:
		return "pending"
	case ordersv1.OrderStatus_ORDER_STATUS_PAYMENT_PENDING:
		return "payment_pending"
	case ordersv1.OrderStatus_ORDER_STATUS_CONFIRMED:
		return "confirmed"
	case ordersv1.OrderStatus_ORDER_STATUS_FAILED:
		return "failed"
	}
	return ""
}

// shipmentStatusText is the one mapping from the wire's shipment status
// to the public API's: none (left out) until the order is confirmed.
func shipmentStatusText(s ordersv1.ShipmentStatus) string {
	switch s {
	case ordersv1.ShipmentStatus_SHIPMENT_STATUS_PENDING:
		return "pending"
	case ordersv1.ShipmentStatus_SHIPMENT_STATUS_BOOKED:
		return "booked"
	}
	return ""
}

// Page is the answer to GET /api/products: one page of the catalogue, in
// SKU order. NextPageToken, passed back as page_token, asks for the next
// page; it is left out on the last one.
type Page struct {
	Products      []Product `json:"products"`
	NextPageToken string    `json:"next_page_token,omitempty"`
}

func (s *server) listProducts(w http.ResponseWriter, r *http.Request) {
	size, token, err := pageQuery(r, true)
	if err != nil {
		problem.Write(w, r, http.StatusBadRequest, err.Error())
		return
	}
	resp, err := s.catalog.ListProducts(r.Context(), &catalogv1.ListProductsRequest{PageSize: int32(size), PageToken: token})
	if err != nil {
		writeUpstreamError(w, r, err, nil)
		return
	}
	out := Page{Products: make([]Product, 0, len(resp.GetProducts())), NextPageToken: resp.GetNextPageToken()}
	for _, p := range resp.GetProducts() {
		out.Products = append(out.Products, productFromProto(p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) getProduct(w http.ResponseWriter, r *http.Request) {
	sku := chi.URLParam(r, "sku")
	if err := checkID("sku", sku); err != nil {
		problem.Write(w, r, http.StatusBadRequest, err.Error())
		return
	}
	p, err := s.catalog.GetProduct(r.Context(), &catalogv1.GetProductRequest{Sku: sku})
	if err != nil {
		writeUpstreamError(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, productFromProto(p))
}

// checkoutOverrides: an unknown SKU in a well-formed checkout is
// unprocessable content, not a missing route.
var checkoutOverrides = map[codes.Code]int{codes.NotFound: http.StatusUnprocessableEntity}

func (s *server) checkout(w http.ResponseWriter, r *http.Request) {
	var req CheckoutRequest
	if status, err := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req); err != nil {
		problem.Write(w, r, status, err.Error())
		return
	}
	if err := req.validate(); err != nil {
		problem.Write(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if !s.simulate(w, r, sim.GatewayCheckout) {
		return
	}
	key, err := parseIdempotencyKey(r.Header.Get("Idempotency-Key"))
	if err != nil {
		problem.Write(w, r, http.StatusBadRequest, err.Error())
		return
	}
	// The key names the logical checkout (request_id) in both modes, so
	// duplicate charges can be counted even where keys are ignored.
	pr := &ordersv1.PlaceOrderRequest{Customer: req.Customer, Address: req.Address, IdempotencyKey: key, RequestId: key}
	for _, it := range req.Items {
		pr.Items = append(pr.Items, &ordersv1.Item{Sku: it.SKU, Qty: it.Qty})
	}

	var trailer metadata.MD
	o, err := s.orders.PlaceOrder(r.Context(), pr, grpc.Trailer(&trailer))
	s.addDownstreamHops(r, trailer)
	if err != nil {
		if keyReused(err) {
			problem.Write(w, r, http.StatusUnprocessableEntity, apperr.Public(err))
			return
		}
		writeUpstreamError(w, r, err, checkoutOverrides)
		return
	}
	w.Header().Set("Location", "/api/orders/"+o.GetOrderId())
	if o.GetStatus() == ordersv1.OrderStatus_ORDER_STATUS_PAYMENT_PENDING {
		// The charge's outcome is unknown: the key is stored, the client
		// looks the order up rather than retrying into a second charge.
		writeJSON(w, http.StatusAccepted, Processing{Status: "processing", OrderID: o.GetOrderId()})
		return
	}
	writeJSON(w, http.StatusCreated, orderFromProto(o))
}

// Processing is the answer to a checkout whose payment outcome is not yet
// known.
type Processing struct {
	Status  string `json:"status"`
	OrderID string `json:"order_id"`
}

// keyReused reports orders' refusal of an Idempotency-Key reused with a
// different request.
func keyReused(err error) bool {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == "IDEMPOTENCY_KEY_REUSED" {
			return true
		}
	}
	return false
}

// simulate does the gateway's own simulated work for a route (auth,
// parsing: "gateway work" in the 800 ms waterfall), recorded as the
// "gateway" hop. It answers 504 and returns false when the budget ran out
// during it.
func (s *server) simulate(w http.ResponseWriter, r *http.Request, method string) bool {
	// The door first: a checkout the fault refuse-rate turns away is
	// answered 503 before anything is done for it.
	err := s.kit.Faults.Refuse(method)
	if err == nil {
		err = s.kit.Faults.Work(r.Context(), method)
	}
	if err != nil {
		writeUpstreamError(w, r, err, nil)
		return false
	}
	return true
}

// addDownstreamHops copies the hops orders reported in its trailer into
// this request's record, for Server-Timing.
func (s *server) addDownstreamHops(r *http.Request, trailer metadata.MD) {
	rec := timing.FromContext(r.Context())
	vals := trailer.Get(timing.MetadataKey)
	if rec == nil || len(vals) == 0 {
		return
	}
	hops, err := timing.Parse(vals[0])
	if err != nil {
		s.log.Warn("orders sent an unreadable server-timing trailer", "err", err)
		return
	}
	for _, h := range hops {
		rec.Add(h)
	}
}

func (s *server) getOrder(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if err := checkID("order id", id); err != nil {
		problem.Write(w, r, http.StatusBadRequest, err.Error())
		return
	}
	o, err := s.orders.GetOrder(r.Context(), &ordersv1.GetOrderRequest{OrderId: id})
	if err != nil {
		writeUpstreamError(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, orderFromProto(o))
}

// Checkout limits, matching orders' own.
const (
	maxItems     = 50
	maxQty       = 1000
	maxTextBytes = 500
	maxIDBytes   = 64
)

// checkID reports a SKU or an order id that cannot name anything: the
// shop's ids are 1 to 64 letters, digits, '.', '_' or '-'. A well-formed
// id that names nothing is left to the service that owns it (404).
func checkID(name, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%s is empty", name)
	case len(id) > maxIDBytes:
		return fmt.Errorf("%s is longer than %d characters", name, maxIDBytes)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%s may hold only letters, digits, '.', '_' and '-'", name)
		}
	}
	return nil
}

func (c CheckoutRequest) validate() error {
	switch {
	case c.Customer == "" || len(c.Customer) > maxTextBytes:
		return fmt.Errorf("customer must be 1 to %d bytes", maxTextBytes)
	case c.Address == "" || len(c.Address) > maxTextBytes:
		return fmt.Errorf("address must be 1 to %d bytes", maxTextBytes)
	case len(c.Items) == 0 || len(c.Items) > maxItems:
		return fmt.Errorf("items: a checkout needs 1 to %d items, got %d", maxItems, len(c.Items))
	}
	for i, it := range c.Items {
		if err := checkID(fmt.Sprintf("items[%d].sku", i), it.SKU); err != nil {
			return err
		}
		if it.Qty < 1 || it.Qty > maxQty {
			return fmt.Errorf("items[%d].qty must be 1 to %d, got %d", i, maxQty, it.Qty)
		}
		if it.UnitPriceCents != 0 {
			return fmt.Errorf("items[%d].unit_price_cents is set by the shop, not the client", i)
		}
	}
	return nil
}

// decodeJSON reads r's body into dst strictly (see internal/jsonbody): a
// JSON content type, at most maxBytes, no unknown fields, one value. It
// returns the HTTP status to answer with when it fails.
func decodeJSON(w http.ResponseWriter, r *http.Request, maxBytes int64, dst any) (int, error) {
	return jsonbody.Decode(w, r, maxBytes, dst)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("panic in handler", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				problem.Write(w, r, http.StatusInternalServerError, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}
