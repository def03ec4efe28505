package serve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/postgres"
)

// Start-up bounds: connecting to the database (a wrong URL or a database
// that is down stops the service at once, with a clear error), and
// migrating its schema (which may wait for another replica migrating it).
const (
	DatabaseOpenTimeout    = 10 * time.Second
	DatabaseMigrateTimeout = time.Minute
)

// OpenDatabase opens the service's pool of connections to the configured
// database (Common.DatabaseURL, sized by DBMaxConns) and brings the
// service's schema up to date with migrate. From then on /readyz answers
// 503 while the database cannot be reached, and the pool is closed when
// the process stops, after its work in flight has drained.
func (k *Kit) OpenDatabase(ctx context.Context, migrate func(context.Context, *pgxpool.Pool) error) (*pgxpool.Pool, error) {
	if k.common.DatabaseURL == "" {
		return nil, errors.New(k.Name + ": no database URL is configured")
	}
	openCtx, cancel := context.WithTimeout(ctx, DatabaseOpenTimeout)
	defer cancel()
	pool, err := postgres.Open(openCtx, k.common.DatabaseURL, postgres.Options{MaxConns: k.common.DBMaxConns})
	if err != nil {
		return nil, fmt.Errorf("%s: database: %w", k.Name, err)
	}
	k.OnClose(pool.Close)
	migrateCtx, cancel := context.WithTimeout(ctx, DatabaseMigrateTimeout)
	defer cancel()
	if err := migrate(migrateCtx, pool); err != nil {
		return nil, fmt.Errorf("%s: database: %w", k.Name, err)
	}
	k.SetReadiness(func(ctx context.Context) error { return postgres.Ready(ctx, pool) })
	return pool, nil
}
