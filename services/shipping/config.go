package shipping

import "github.com/mercado-lab/mercado/internal/serve"

// Default listen addresses (see DESIGN's port table).
const (
	DefaultAddr      = ":50054"
	DefaultAdminAddr = ":9084"
)

// Config is the shipping service's configuration: the settings every service
// shares.
type Config = serve.Common

// DefaultConfig returns the configuration with every default filled in.
func DefaultConfig() Config { return serve.Defaults(DefaultAddr, DefaultAdminAddr) }
