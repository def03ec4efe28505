package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/postgres"
)

// modeDatabase creates a database of its own for one mode's shop, on the
// server databaseURL names, and returns its URL and a func that drops it.
// Modes must not share one: what a mode leaves behind would count in the
// next — a naive run's abandoned charges, settled by the next shop's
// payments, are duplicate charges of checkouts naive made.
func modeDatabase(ctx context.Context, databaseURL string, m mode.Mode) (string, func(), error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "", nil, fmt.Errorf("database URL: %w", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := fmt.Sprintf("mercado_lab_%s_%s", m, hex.EncodeToString(b))
	admin := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, databaseURL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := admin("CREATE DATABASE " + pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("creating a database for the %s shop (the lab gives each mode a database of its own; the URL's role needs CREATEDB): %w", m, err)
	}
	u.Path = "/" + name
	drop := func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = postgres.DropDatabase(ctx, databaseURL, name)
	}
	return u.String(), drop, nil
}
