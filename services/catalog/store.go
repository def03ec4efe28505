package catalog

import (
	"context"
	"fmt"

	"github.com/mercado-lab/mercado/internal/serve"
)

// newStore returns the store the configuration asks for: PostgreSQL when
// a database URL is set — migrated, and seeded with the demo catalogue
// where a product is missing — else the in-memory store, seeded afresh.
func newStore(ctx context.Context, cfg Config, kit *serve.Kit) (Store, error) {
	if cfg.DatabaseURL == "" {
		return NewMemStore(Seed()), nil
	}
	pool, err := kit.OpenDatabase(ctx, Migrate)
	if err != nil {
		return nil, err
	}
	s, err := NewPGStore(pool)
	if err != nil {
		return nil, err
	}
	if err := s.Seed(ctx, Seed()); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return s, nil
}
