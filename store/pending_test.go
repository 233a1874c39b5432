package store

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// PendingPostgres counts what Open would apply, applies nothing itself,
// and refuses a history this build cannot continue, as Open does.
func TestPendingPostgres(t *testing.T) {
	if testEngine != "postgres" {
		t.Skip("PostgreSQL only: run with AGENT_WORKER_TEST_STORE=postgres")
	}
	ctx := t.Context()
	dsn := testPath(t)
	all, err := loadMigrations(postgresMigrations())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first count made nothing that changes the second
		if n, err := PendingPostgres(ctx, dsn); err != nil || n != len(all) {
			t.Fatalf("PendingPostgres on a new database = %d, %v; want %d, nil", n, err, len(all))
		}
	}
	openAt(t, dsn, Options{})
	if n, err := PendingPostgres(ctx, dsn); err != nil || n != 0 {
		t.Fatalf("PendingPostgres after Open = %d, %v; want 0, nil", n, err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO migration_history (name, sha256, applied_at, ms) VALUES ('9999_future.sql', 'x', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := PendingPostgres(ctx, dsn); err == nil || !strings.Contains(err.Error(), "newer agent-worker") {
		t.Errorf("PendingPostgres with a newer migration = %v, want the error Open gives", err)
	}
}
