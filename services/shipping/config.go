package shipping

import "github.com/mercado-lab/mercado/internal/serve"

// Default listen addresses (docs/deploy.md, "Ports"); the admin API on
// loopback, out of other machines' reach unless told otherwise.
const (
	DefaultAddr      = ":8084"
	DefaultAdminAddr = "127.0.0.1:9084"
)

// Config is the shipping service's configuration: the settings every service
// shares.
type Config = serve.Common

// DefaultConfig returns the configuration with every default filled in.
func DefaultConfig() Config { return serve.Defaults(DefaultAddr, DefaultAdminAddr) }
