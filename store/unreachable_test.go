package store

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/store/pgtest"
)

// A database server that cannot be reached is unavailable (HTTP 503, CLI
// exit 6), not an internal error (issue 27, item 3): connection failures,
// PostgreSQL's connection exceptions and its shutdowns.
func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	for name, err := range map[string]error{
		"admin shutdown":     &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		"cannot connect now": &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"},
		"connection failure": &pgconn.PgError{Code: "08006", Message: "connection failure"},
		"refused":            fmt.Errorf("dial: %w", syscall.ECONNREFUSED),
	} {
		if got := classify(err); contract.ErrorCode(got) != contract.CodeUnavailable {
			t.Errorf("%s: classify = %v (code %q), want unavailable", name, got, contract.ErrorCode(got))
		}
	}
	if got := classify(&pgconn.PgError{Code: "42P01", Message: "undefined table"}); contract.ErrorCode(got) == contract.CodeUnavailable {
		t.Errorf("a query error came back as unavailable: %v", got)
	}
	if got := classify(errors.New("disk I/O")); contract.ErrorCode(got) == contract.CodeUnavailable {
		t.Errorf("an unknown error came back as unavailable: %v", got)
	}
}

// The real thing: a PostgreSQL server stopped under an open store makes
// its reads and writes unavailable, saying the store is unreachable.
func TestStoppedPostgresIsUnavailable(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t) // its own: this test stops it
	ctx := t.Context()
	dsn, err := pg.CreateDatabase(ctx, "unreachable") // gone with the server: no drop
	if err != nil {
		t.Fatal(err)
	}
	db := openAt(t, dsn, Options{PoolSize: 2})
	createTeam(t, db, Scope{"team", "t"}, "alice")
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Counts(ctx); contract.ErrorCode(err) != contract.CodeUnavailable {
		t.Errorf("a read with the server gone = %v; want unavailable", err)
	}
	_, err = db.CreateToken(ctx, AgentKey{"alice", "team", "t"}, "")
	if contract.ErrorCode(err) != contract.CodeUnavailable {
		t.Errorf("a write with the server gone = %v; want unavailable", err)
	}
}
