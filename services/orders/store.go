package orders

import (
	"context"

	"github.com/mercado-lab/mercado/internal/serve"
)

// newStores returns the order and key stores the configuration asks for:
// PostgreSQL when a database URL is set (migrated; both in the orders
// schema, on one pool), else the in-memory stores.
func newStores(ctx context.Context, cfg Config, kit *serve.Kit) (Store, Keys, error) {
	if cfg.DatabaseURL == "" {
		store := NewMemStore()
		return store, NewMemKeys(store), nil
	}
	pool, err := kit.OpenDatabase(ctx, Migrate)
	if err != nil {
		return nil, nil, err
	}
	store, err := NewPGStore(pool)
	if err != nil {
		return nil, nil, err
	}
	keys, err := NewPGKeys(pool)
	if err != nil {
		return nil, nil, err
	}
	return store, keys, nil
}
