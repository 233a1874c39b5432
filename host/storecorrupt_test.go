package host

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/api"
)

// A table damaged under a running daemon (issue 27, item 4): the requests
// that read it answer 503 naming the file, never "internal error", and
// status still answers, from what the daemon knows, with the store
// CORRUPT (not UNREACHABLE) among its problems.
func TestDamagedTableMakesStoreCorrupt(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	path := th.DB().Path()
	c, ctx := th.client(), context.Background()
	if h, err := c.Health(ctx); err != nil || h.Store.CorruptSince != nil {
		t.Fatalf("health before = %+v, %v", h.Store, err)
	}

	// Every page of the workflows table and its indexes, overwritten in
	// the file; then a commit from another connection, after which the
	// daemon's connections drop what they had cached and read the file.
	raw, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := sqlitex.ExecuteTransient(raw, "PRAGMA wal_checkpoint(TRUNCATE)", nil); err != nil {
		t.Fatal(err)
	}
	var pages []int
	err = sqlitex.ExecuteTransient(raw, `SELECT pageno FROM dbstat WHERE name IN (SELECT name FROM sqlite_schema WHERE tbl_name = 'workflows')`,
		&sqlitex.ExecOptions{ResultFunc: func(s *sqlite.Stmt) error {
			pages = append(pages, s.ColumnInt(0))
			return nil
		}})
	var pageSize int
	if err == nil {
		pageSize, err = sqlitex.ResultInt(raw.Prep("PRAGMA page_size"))
	}
	if err != nil || len(pages) == 0 {
		t.Fatalf("pages of workflows: %v, %v", pages, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, pg := range pages {
		if _, err := f.WriteAt([]byte(strings.Repeat("\xde", pageSize)), int64(pg-1)*int64(pageSize)); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if err := sqlitex.ExecuteTransient(raw, "PRAGMA user_version = 27", nil); err != nil {
		t.Fatal(err)
	}

	status, e, _ := th.call(t, "GET", "/workflows", "")
	if status != http.StatusServiceUnavailable || e.Code != api.CodeUnavailable || !strings.Contains(e.Message, "the database file "+path+" is damaged") {
		t.Errorf("GET /workflows over a damaged table: %d %+v; want 503 naming the damaged file", status, e)
	}
	h, err := c.Health(ctx)
	if err != nil {
		t.Fatalf("status with a damaged table: %v", err)
	}
	if h.Status != "degraded" || h.Store.CorruptSince == nil || h.Store.Corrupt == "" || h.Store.UnreachableSince != nil {
		t.Errorf("health = %s, store %+v; want degraded, corrupt since, not unreachable", h.Status, h.Store)
	}
	if p := strings.Join(h.Problems, "\n"); !strings.Contains(p, "store: CORRUPT since ") || !strings.Contains(p, "agent-worker backup") {
		t.Errorf("problems = %q; want the store CORRUPT and what to do", h.Problems)
	}
}
