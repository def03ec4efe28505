package serve

import (
	"context"
	"net/http"
)

// NewAdminServer exposes the admin listener's server to the package's
// external tests, so they can check its limits.
func NewAdminServer(extra http.Handler, ready func(context.Context) error) *http.Server {
	return newAdminServer(&Process{}, extra, ready)
}
