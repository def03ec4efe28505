package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mercado-lab/mercado/internal/faults"
)

// Client calls one service's admin API. It is the one client of that API
// in Mercado: mercado mode and mercado fault use it, so do the labs' shop
// driver and the gateway when it passes a switch on to its peers.
type Client struct {
	// URL is the admin base URL, such as "http://localhost:9081".
	URL string
	// Token, when set, is sent as the bearer token every change needs on a
	// service that has one.
	Token string
	// HTTP makes the calls; nil means a client with DefaultTimeout.
	HTTP *http.Client
}

// DefaultTimeout bounds each call of a Client whose HTTP is nil.
const DefaultTimeout = 10 * time.Second

// ErrNoAnswer is wrapped by the error of a call that found nothing
// listening at the URL.
var ErrNoAnswer = errors.New("nothing answers")

// StatusError is an answer other than 2xx.
type StatusError struct {
	Method, Path string
	Status       int
	// Detail is the problem document's detail; empty when the answer was
	// not one.
	Detail string
}

func (e *StatusError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s %s: HTTP %d", e.Method, e.Path, e.Status)
	}
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Detail)
}

// Mode reads the mode and mechanisms in force (GET /admin/mode).
func (c Client) Mode(ctx context.Context) (ModeView, error) {
	var v ModeView
	err := c.call(ctx, http.MethodGet, "/admin/mode", nil, &v)
	return v, err
}

// Switch switches the service's mode (PUT /admin/mode). On the gateway it
// switches the whole shop, and the results are every service's; on any
// other service, its own. When a peer failed, the results come with an
// error.
func (c Client) Switch(ctx context.Context, ch ModeChange) ([]PeerResult, error) {
	var answer struct {
		Services []PeerResult `json:"services"`
		ModeView
	}
	err := c.call(ctx, http.MethodPut, "/admin/mode", ch, &answer)
	if answer.Services == nil && err == nil {
		return []PeerResult{{Service: answer.Service, OK: true, Settings: &answer.ModeView}}, nil
	}
	return answer.Services, err
}

// SwitchSelf switches this service alone, even on the gateway
// (PUT /admin/mode?scope=self).
func (c Client) SwitchSelf(ctx context.Context, ch ModeChange) (ModeView, error) {
	var v ModeView
	err := c.call(ctx, http.MethodPut, "/admin/mode?scope=self", ch, &v)
	return v, err
}

// Peers lists the services a switch on this one fans out to
// (GET /admin/peers): the gateway's are the rest of the shop.
func (c Client) Peers(ctx context.Context) ([]Peer, error) {
	var v struct {
		Peers []Peer `json:"peers"`
	}
	err := c.call(ctx, http.MethodGet, "/admin/peers", nil, &v)
	return v.Peers, err
}

// Faults reads the faults in force (GET /admin/faults).
func (c Client) Faults(ctx context.Context) (FaultsView, error) {
	var v FaultsView
	err := c.call(ctx, http.MethodGet, "/admin/faults", nil, &v)
	return v, err
}

// SetFaults replaces every fault with set (PUT /admin/faults).
func (c Client) SetFaults(ctx context.Context, set faults.Set) (FaultsView, error) {
	var v FaultsView
	err := c.call(ctx, http.MethodPut, "/admin/faults", set, &v)
	return v, err
}

// SetFault sets one method's fault (PUT /admin/faults/{method}).
func (c Client) SetFault(ctx context.Context, method string, spec faults.Spec) (FaultsView, error) {
	var v FaultsView
	err := c.call(ctx, http.MethodPut, "/admin/faults/"+url.PathEscape(method), spec, &v)
	return v, err
}

// ClearFaults clears one method's fault, or every fault when method is ""
// or faults.AllMethods (DELETE /admin/faults[/{method}]).
func (c Client) ClearFaults(ctx context.Context, method string) (FaultsView, error) {
	path := "/admin/faults"
	if method != "" && method != faults.AllMethods {
		path += "/" + url.PathEscape(method)
	}
	var v FaultsView
	err := c.call(ctx, http.MethodDelete, path, nil, &v)
	return v, err
}

// Read reads one of the service's own read routes as JSON into out, such
// as payments' GET /admin/charges.
func (c Client) Read(ctx context.Context, path string, out any) error {
	return c.call(ctx, http.MethodGet, path, nil, out)
}

// maxMetricsBytes bounds one scrape.
const maxMetricsBytes = 16 << 20

// Metrics scrapes the service's /metrics and parses the Prometheus text
// exposition, by family name.
func (c Client) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	resp, err := c.do(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, maxMetricsBytes))
	if err != nil {
		return nil, fmt.Errorf("parsing %s/metrics: %w", c.URL, err)
	}
	return fams, nil
}

// maxAnswerBytes bounds a JSON answer.
const maxAnswerBytes = 1 << 20

// call sends body (when not nil) as JSON and reads the answer into out.
// A fanned-out switch answers 502 with every service's result: a JSON
// answer is read into out whatever its status.
func (c Client) call(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.do(ctx, method, path, body)
	var serr *StatusError
	if err != nil && !errors.As(err, &serr) {
		return err
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if serr != nil {
		var p struct {
			Detail string `json:"detail"`
		}
		if json.Unmarshal(b, &p) == nil {
			serr.Detail = p.Detail
			_ = json.Unmarshal(b, out)
		}
		return serr
	}
	if rerr != nil {
		return fmt.Errorf("%s %s: %w", method, path, rerr)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: unreadable answer: %w", method, path, err)
	}
	return nil
}

// textBody is a request body sent as plain text, not as JSON.
type textBody string

// do makes one call. An answer other than 2xx comes back with its body
// open and a *StatusError; a call nothing answered, with an error that
// wraps ErrNoAnswer.
func (c Client) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	contentType := "application/json"
	switch b := body.(type) {
	case nil:
	case textBody:
		rd, contentType = strings.NewReader(string(b)), "text/plain; charset=utf-8"
	default:
		js, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.URL, "/")+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	resp, err := hc.Do(req)
	if opErr := (*net.OpError)(nil); errors.As(err, &opErr) && opErr.Op == "dial" {
		return nil, fmt.Errorf("%w: %w", ErrNoAnswer, err)
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return resp, &StatusError{Method: method, Path: path, Status: resp.StatusCode}
	}
	return resp, nil
}
