package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

type historyRow struct {
	Name, Sum     string
	AppliedAt, Ms int64
}

func readHistory(t *testing.T, db *DB) []historyRow {
	t.Helper()
	var rows []historyRow
	err := db.read(t.Context(), func(conn querier) error {
		return conn.execute(`SELECT name, sha256, applied_at, ms FROM migration_history ORDER BY name`,
			&execOptions{ResultFunc: func(s row) error {
				rows = append(rows, historyRow{s.ColumnText(0), s.ColumnText(1), s.ColumnInt64(2), s.ColumnInt64(3)})
				return nil
			}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestOpenFresh(t *testing.T) {
	sqliteOnly(t, "the file's mode and pragmas")
	t.Parallel()
	path := testPath(t)
	db := openAt(t, path, Options{PoolSize: 3})

	if db.Path() != path {
		t.Errorf("Path() = %q, want %q", db.Path(), path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("database file mode = %v, want 0600", fi.Mode().Perm())
	}

	// Every pooled connection, not just the first, must have the PRAGMAs.
	var conns []*sqlite.Conn
	for range 3 {
		conn, err := db.eng.(*sqliteEngine).pool.Take(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
	}
	for i, conn := range conns {
		for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "synchronous": "1"} {
			var got string
			err := sqlitex.ExecuteTransient(conn, "PRAGMA "+pragma, &sqlitex.ExecOptions{ResultFunc: func(s *sqlite.Stmt) error {
				got = s.ColumnText(0)
				return nil
			}})
			if err != nil || got != want {
				t.Errorf("conn %d: PRAGMA %s = %q (err %v), want %q", i, pragma, got, err, want)
			}
		}
	}
	for _, conn := range conns {
		db.eng.(*sqliteEngine).pool.Put(conn)
	}

	// One history row per file on disk, with that file's hash.
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	var want []historyRow
	for _, e := range entries {
		if e.IsDir() {
			continue // postgres/: the other engine's
		}
		b, err := os.ReadFile(filepath.Join("migrations", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		want = append(want, historyRow{Name: e.Name(), Sum: hex.EncodeToString(sum[:])})
	}
	got := readHistory(t, db)
	for i := range got {
		if got[i].AppliedAt == 0 {
			t.Errorf("%s: applied_at not set", got[i].Name)
		}
		got[i].AppliedAt, got[i].Ms = 0, 0
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("migration_history (-want +got):\n%s", diff)
	}

	ws, err := db.ListWorkflows(t.Context())
	if err != nil || len(ws) != 1 || ws[0].Name != "global" || ws[0].Tag != "main" || ws[0].State != "running" {
		t.Errorf("ListWorkflows on a fresh database = %+v, %v; want only global:main, running", ws, err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	path := testPath(t)
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	db, err := Open(t.Context(), path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	created, err := db.CreateAgent(t.Context(), Agent{
		Name: "alice", Workflow: "review", Tag: "pr-1", Backend: "claude", Model: "sonnet",
		System: "You review code.", Schedule: "@every 1h", WakeupPrompt: "Check the queue.",
		Config: backend.AgentConfig{MaxSteps: 3, Extra: map[string]json.RawMessage{"sandbox": []byte(`"read-only"`)}}, Task: "review #1",
	})
	if err != nil {
		t.Fatal(err)
	}
	history := readHistory(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// A later clock: a re-applied migration would show a new applied_at.
	clk.Set(clk.Now().Add(time.Hour))
	db = openAt(t, path, Options{Now: clk.Now})
	if diff := cmp.Diff(history, readHistory(t, db)); diff != "" {
		t.Errorf("migration_history changed on re-open (-before +after):\n%s", diff)
	}
	got, err := db.GetAgent(t.Context(), created.Key())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("agent changed across re-open (-created +reloaded):\n%s", diff)
	}
}

func TestInjectedNow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 6, 7, 8, 9, 123_456_789, time.FixedZone("X", 3600))
	clk := &clock{t: t0}
	db := openAt(t, testPath(t), Options{Now: clk.Now})

	a, err := db.CreateAgent(t.Context(), Agent{Name: "alice", Workflow: "global", Tag: "main"})
	if err != nil {
		t.Fatal(err)
	}
	// Stored at millisecond precision, read back in UTC.
	want := time.Date(2026, 5, 6, 6, 8, 9, 123_000_000, time.UTC)
	if !a.CreatedAt.Equal(want) || a.CreatedAt.Location() != time.UTC || !a.UpdatedAt.Equal(want) {
		t.Errorf("CreatedAt, UpdatedAt = %v, %v; want %v", a.CreatedAt, a.UpdatedAt, want)
	}

	clk.Set(t0.Add(time.Minute))
	if err := db.SetAgentState(t.Context(), a.Key(), "running", ""); err != nil {
		t.Fatal(err)
	}
	a, err = db.GetAgent(t.Context(), a.Key())
	if err != nil {
		t.Fatal(err)
	}
	if !a.CreatedAt.Equal(want) || !a.UpdatedAt.Equal(want.Add(time.Minute)) {
		t.Errorf("after update: CreatedAt, UpdatedAt = %v, %v; want %v, %v", a.CreatedAt, a.UpdatedAt, want, want.Add(time.Minute))
	}
}

func TestConcurrentCreates(t *testing.T) {
	t.Parallel()
	const n = 100

	t.Run("distinct names", func(t *testing.T) {
		t.Parallel()
		db := openTest(t)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, errs[i] = db.CreateAgent(t.Context(), Agent{Name: fmt.Sprintf("a%03d", i), Workflow: "team", Tag: "t"})
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		as, err := db.ListAgents(t.Context(), AgentFilter{Workflow: "team"})
		if err != nil || len(as) != n {
			t.Fatalf("ListAgents = %d agents, %v; want %d", len(as), err, n)
		}
	})

	t.Run("same name", func(t *testing.T) {
		t.Parallel()
		db := openTest(t)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, errs[i] = db.CreateAgent(t.Context(), Agent{Name: "alice", Workflow: "team", Tag: "t"})
			})
		}
		wg.Wait()
		ok, conflicts := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case contract.ErrorCode(err) == contract.CodeConflict:
				conflicts++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}
		if ok != 1 || conflicts != n-1 {
			t.Errorf("%d successes and %d conflicts; want 1 and %d", ok, conflicts, n-1)
		}
	})
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	if _, err := db.CreateAgent(ctx, Agent{Name: "alice", Workflow: "global", Tag: "main"}); !errors.Is(err, context.Canceled) {
		t.Errorf("CreateAgent with a cancelled context: err = %v, want context.Canceled", err)
	}
	if _, err := db.GetAgent(t.Context(), AgentKey{"alice", "global", "main"}); contract.ErrorCode(err) != contract.CodeNotFound {
		t.Errorf("agent written despite cancelled context: GetAgent err = %v", err)
	}

	// Cancelling while a write is under way must neither interrupt nor
	// split it: both rows commit.
	ctx, cancel = context.WithCancel(t.Context())
	err := db.write(ctx, func(conn querier) error {
		insert := `INSERT INTO workflows (name, tag, created_at, updated_at) VALUES (?, 't', 0, 0)`
		if err := conn.execute(insert, &execOptions{Args: []any{"before"}}); err != nil {
			return err
		}
		cancel() // the driver checks for an interrupt before every step
		return conn.execute(insert, &execOptions{Args: []any{"after"}})
	})
	if err != nil {
		t.Fatalf("write cancelled mid-transaction: %v", err)
	}
	for _, name := range []string{"before", "after"} {
		if _, err := db.GetWorkflow(t.Context(), name, "t"); err != nil {
			t.Errorf("GetWorkflow(%s): %v", name, err)
		}
	}

	// Every pooled connection still works.
	for i := range 8 {
		if _, err := db.CreateAgent(t.Context(), Agent{Name: fmt.Sprintf("b%d", i), Workflow: "global", Tag: "main"}); err != nil {
			t.Fatalf("CreateAgent after cancellations: %v", err)
		}
	}
}

func TestCounts(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	for _, k := range []AgentKey{{"a", "global", "main"}, {"b", "w", "t"}, {"c", "w", "t"}} {
		if _, err := db.CreateAgent(t.Context(), Agent{Name: k.Name, Workflow: k.Workflow, Tag: k.Tag}); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(t, db, `INSERT INTO messages (id, workflow, tag, sender, content, created_at) VALUES ('m1', 'w', 't', 'b', 'hi', 0)`)
	mustExec(t, db, `INSERT INTO runs (id, agent, workflow, tag, backend) VALUES ('r1', 'b', 'w', 't', 'mock')`)
	got, err := db.Counts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Counts{Agents: 3, Workflows: 2, Messages: 1, Runs: 1}, got); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
}
