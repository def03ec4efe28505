package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DropDatabase drops the database name on the server adminURL connects
// to (a database other than name). FORCE ends any session still connected
// to it. It may not end the server's own autovacuum worker, which starts
// on a database that has just taken many writes: a role without
// pg_signal_backend is refused (SQLSTATE 42501) while the worker runs. The
// worker is short, so the drop is tried again until ctx ends.
func DropDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("dropping database %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	sql := "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"
	for {
		_, err := conn.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		if err == nil {
			return nil
		}
		if !errors.As(err, &pgErr) || pgErr.Code != insufficientPrivilege || ctx.Err() != nil {
			return fmt.Errorf("DROP DATABASE %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("DROP DATABASE %s: %w", name, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// insufficientPrivilege is PostgreSQL's SQLSTATE for a privilege the role
// lacks.
const insufficientPrivilege = "42501"
