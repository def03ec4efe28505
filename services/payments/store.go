package payments

import (
	"context"

	"github.com/mercado-lab/mercado/internal/serve"
)

// newStores returns the stores the configuration asks for — the charges
// and the audit trail: PostgreSQL when a database URL is set (migrated),
// else in memory.
func newStores(ctx context.Context, cfg Config, kit *serve.Kit) (Store, AuditStore, error) {
	if cfg.DatabaseURL == "" {
		return NewMemStore(), NewMemAuditStore(), nil
	}
	pool, err := kit.OpenDatabase(ctx, Migrate)
	if err != nil {
		return nil, nil, err
	}
	store, err := NewPGStore(pool)
	if err != nil {
		return nil, nil, err
	}
	audit, err := NewPGAuditStore(pool)
	return store, audit, err
}
