package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PendingPostgres connects to the PostgreSQL database at dsn and counts
// the migrations of this build it has not applied yet, applying none and
// creating nothing: what `agent-worker doctor` reports about a --store
// URL when no daemon runs. A history this build cannot continue (a
// migration it does not know or that changed) is an error, as Open's.
func PendingPostgres(ctx context.Context, dsn string) (int, error) {
	where := RedactURL(dsn)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, fmt.Errorf("connect to %s: %w", where, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ms, err := loadMigrations(postgresMigrations())
	if err != nil {
		return 0, err
	}
	var made bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('migration_history') IS NOT NULL`).Scan(&made); err != nil {
		return 0, fmt.Errorf("read migration_history of %s: %w", where, err)
	}
	applied := map[string]string{}
	if made {
		rows, err := conn.Query(ctx, `SELECT name, sha256 FROM migration_history`)
		if err != nil {
			return 0, fmt.Errorf("read migration_history of %s: %w", where, err)
		}
		for rows.Next() {
			var name, sum string
			if err := rows.Scan(&name, &sum); err != nil {
				rows.Close()
				return 0, fmt.Errorf("read migration_history of %s: %w", where, err)
			}
			applied[name] = sum
		}
		if err := rows.Err(); err != nil {
			return 0, fmt.Errorf("read migration_history of %s: %w", where, err)
		}
	}
	pending, err := pendingMigrations(ms, applied)
	if err != nil {
		return 0, fmt.Errorf("store %s: %w", where, err)
	}
	return len(pending), nil
}
