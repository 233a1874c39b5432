package store

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// testPath returns a database path in a directory that does not exist yet,
// so every test also exercises Open's directory creation.
func testPath(t *testing.T) string {
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

func openTest(t *testing.T) *DB { return openAt(t, testPath(t), Options{PoolSize: 4}) }

// mustExec runs one write statement as the store's own writes run.
func mustExec(t *testing.T, db *DB, query string, args ...any) {
	t.Helper()
	err := db.write(context.Background(), func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, query, &sqlitex.ExecOptions{Args: args})
	})
	if err != nil {
		t.Fatalf("exec %q: %v", query, err)
	}
}

// queryInt runs a query that returns one integer.
func queryInt(t *testing.T, db *DB, query string, args ...any) int {
	t.Helper()
	var n int
	err := db.read(context.Background(), func(conn *sqlite.Conn) (err error) {
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
