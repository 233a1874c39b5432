package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/store/pgtest"
	"zombiezen.com/go/sqlite"
)

// testPath returns a database path in a directory that does not exist yet,
// so every test also exercises Open's directory creation.
// On PostgreSQL it is a new database's URL, which a test may open again
// like a file.
func testPath(t *testing.T) string {
	if testEngine == "postgres" {
		return pgtest.Shared(t).NewDatabase(t)
	}
	return filepath.Join(t.TempDir(), "home", "agent-worker.db")
}

// openAt opens path and closes the store when the test ends.
func openAt(t *testing.T, path string, opts Options) *DB {
	t.Helper()
	db, err := Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// openTest opens a fresh store on the engine under test: the SQLite file by
// default, a new database of a throwaway PostgreSQL cluster when
// AGENT_WORKER_TEST_STORE=postgres (make test-e2e runs the suite both ways).
func openTest(t *testing.T) *DB {
	return openAt(t, testPath(t), Options{PoolSize: 4})
}

// testEngine is the engine the suite runs on.
var testEngine = os.Getenv("AGENT_WORKER_TEST_STORE")

func TestMain(m *testing.M) {
	switch testEngine {
	case "", "sqlite":
	case "postgres":
		pgtest.Main(m)
	default:
		fmt.Fprintf(os.Stderr, "AGENT_WORKER_TEST_STORE=%q: use sqlite (the default) or postgres\n", testEngine)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// sqliteOnly skips a test of the SQLite file itself (its path, pragmas,
// query plans, disk-full handling) when the suite runs on PostgreSQL.
func sqliteOnly(t *testing.T, why string) {
	t.Helper()
	if testEngine == "postgres" {
		t.Skipf("SQLite only (%s): the suite is running on PostgreSQL", why)
	}
}

// rawSQLite is the SQLite connection under a querier, for tests that use
// SQLite itself (pragmas, scripts).
func rawSQLite(conn querier) *sqlite.Conn { return conn.(sqliteConn).c }

// mustExec runs one write statement as the store's own writes run.
func mustExec(t *testing.T, db *DB, query string, args ...any) {
	t.Helper()
	err := db.write(context.Background(), func(conn querier) error {
		return conn.execute(query, &execOptions{Args: args})
	})
	if err != nil {
		t.Fatalf("exec %q: %v", query, err)
	}
}

// queryInt runs a query that returns one integer.
func queryInt(t *testing.T, db *DB, query string, args ...any) int {
	t.Helper()
	var n int
	err := db.read(context.Background(), func(conn querier) (err error) {
		n, err = count(conn, query, args...)
		return err
	})
	if err != nil {
		t.Fatalf("query %q: %v", query, err)
	}
	return n
}

// clock is an injectable Now that tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
