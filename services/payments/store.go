package payments

import (
	"context"

	"github.com/mercado-lab/mercado/internal/serve"
)

// newStore returns the store the configuration asks for: PostgreSQL when
// a database URL is set (migrated), else the in-memory store.
func newStore(ctx context.Context, cfg Config, kit *serve.Kit) (Store, error) {
	if cfg.DatabaseURL == "" {
		return NewMemStore(), nil
	}
	pool, err := kit.OpenDatabase(ctx, Migrate)
	if err != nil {
		return nil, err
	}
	return NewPGStore(pool)
}
