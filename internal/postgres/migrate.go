package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// schemaName is what Migrate accepts as a schema: a plain lower-case SQL
// identifier, safe to put in a statement as it is.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// MigrateDir is Migrate with the migrations in folder dir of fsys, as a
// service embeds them (//go:embed migrations/*.sql).
func MigrateDir(ctx context.Context, pool *pgxpool.Pool, schema string, fsys fs.FS, dir string) error {
	files, err := fs.Sub(fsys, dir)
	if err != nil {
		return fmt.Errorf("postgres: migrate %s: %w", schema, err)
	}
	return Migrate(ctx, pool, schema, files)
}

// Migrate brings schema up to date with the versioned SQL migrations in
// migrations (goose files at its root: 001_init.sql, 002_....sql, each
// with "-- +goose Up"). It creates the schema if needed and records the
// versions applied in schema.goose_db_version, one table per schema.
//
// It is safe to run from several replicas at once: each run holds a
// PostgreSQL advisory lock keyed by the schema while it works, so one
// replica migrates and the others then find nothing left to do. Running it
// again on an up-to-date schema changes nothing.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string, migrations fs.FS) error {
	if !schemaName.MatchString(schema) {
		return fmt.Errorf("postgres: migrate: %q is not a plain lower-case schema name", schema)
	}
	key := lockKey(schema)
	if err := createSchema(ctx, pool, schema, key); err != nil {
		return err
	}
	// goose polls pg_try_advisory_lock; a replica that waits here is rare,
	// since createSchema already queued it behind the one migrating.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(key), lock.WithLockTimeout(1, 60))
	if err != nil {
		return fmt.Errorf("postgres: migrate %s: %w", schema, err)
	}
	db := stdlib.OpenDBFromPool(pool) // closing db leaves the pool open
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations,
		goose.WithSessionLocker(locker),
		goose.WithTableName(schema+".goose_db_version"),
		goose.WithDisableGlobalRegistry(true),
		goose.WithLogger(goose.NopLogger()),
	)
	if err != nil {
		_ = db.Close()
		return fmt.Errorf("postgres: migrate %s: %w", schema, err)
	}
	_, err = p.Up(ctx)
	err = errors.Join(err, p.Close())
	if err != nil {
		return Error(err, "migrating schema "+schema)
	}
	return nil
}

// createSchema creates schema if it does not exist. Two sessions running
// CREATE SCHEMA IF NOT EXISTS at once can still collide on the catalog's
// unique index, so it runs under the migration's advisory lock, taken for
// the transaction. As the lock is the one goose holds while migrating, a
// replica arriving mid-migration waits here until the schema is done.
func createSchema(ctx context.Context, pool *pgxpool.Pool, schema string, key int64) error {
	return InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", key); err != nil {
			return Error(err, "locking schema "+schema)
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return Error(err, "creating schema "+schema)
		}
		return nil
	})
}

// lockKey is the advisory lock of one schema's migrations, so that
// different services migrate in parallel and replicas of one service in
// turn.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("mercado/migrate/" + schema))
	return int64(h.Sum64())
}
