package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
// 503 while the database cannot be reached, GET /admin/db reports the
// pool (DBStats), and the pool is closed when the process stops, after
// its work in flight has drained.
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
	k.HandleAdmin("GET /admin/db", dbStatsHandler(pool))
	return pool, nil
}

// DBStats is what GET /admin/db reports of a service's connection pool:
// a connection that is never given back shows as AcquiredConns that stay
// above 0 once the load has stopped.
type DBStats struct {
	MaxConns          int32 `json:"max_conns"`
	TotalConns        int32 `json:"total_conns"`
	AcquiredConns     int32 `json:"acquired_conns"`
	IdleConns         int32 `json:"idle_conns"`
	ConstructingConns int32 `json:"constructing_conns"`
	// AcquireCount counts every acquire; EmptyAcquireCount those that
	// had to wait for a connection; CanceledAcquireCount those whose
	// context ended while they waited.
	AcquireCount         int64 `json:"acquire_count"`
	EmptyAcquireCount    int64 `json:"empty_acquire_count"`
	CanceledAcquireCount int64 `json:"canceled_acquire_count"`
	NewConnsCount        int64 `json:"new_conns_count"`
	// The pool's commits, by kind, and its transactions open now
	// (internal/postgres/counter.go).
	postgres.Counts
}

func dbStatsHandler(pool *pgxpool.Pool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := pool.Stat()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(DBStats{
			MaxConns: st.MaxConns(), TotalConns: st.TotalConns(), AcquiredConns: st.AcquiredConns(),
			IdleConns: st.IdleConns(), ConstructingConns: st.ConstructingConns(),
			AcquireCount: st.AcquireCount(), EmptyAcquireCount: st.EmptyAcquireCount(),
			CanceledAcquireCount: st.CanceledAcquireCount(), NewConnsCount: st.NewConnsCount(),
			Counts: postgres.CountsOf(pool),
		})
	})
}
