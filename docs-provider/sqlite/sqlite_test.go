package sqlitedocs_test

import (
	"errors"
	"path/filepath"
	"testing"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	sqlitedocs "github.com/agent-worker/agent-worker/docs-provider/sqlite"
	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/docprovidertest"
)

func open(t *testing.T, path string) *sqlitedocs.Provider {
	t.Helper()
	p, err := sqlitedocs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestConformance(t *testing.T) {
	docprovidertest.Run(t, func(t *testing.T) docprovider.Provider {
		return open(t, filepath.Join(t.TempDir(), "docs.db"))
	})
}

// Documents outlive the process: a provider restarted by the daemon sees
// what the previous one wrote.
func TestDocumentsSurviveReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nested", "docs.db")
	r := docprovider.Ref{Workflow: "review", Tag: "main", Path: "notes.md"}
	p, err := sqlitedocs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(t.Context(), r, "before"); err != nil {
		t.Fatal(err)
	}
	if err := p.Append(t.Context(), r, " restart"); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p = open(t, path)
	if got, err := p.Read(t.Context(), r); err != nil || got != "before restart" {
		t.Errorf("Read after reopen = %q, %v; want %q", got, err, "before restart")
	}
	if err := p.Create(t.Context(), r, "again"); !errors.Is(err, sdk.ErrConflict) {
		t.Errorf("Create after reopen = %v, want sdk.ErrConflict", err)
	}
}

// Pointing the provider at another program's database (such as the
// daemon's) must fail before anything is written to it.
func TestRefusesForeignDatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent-worker.db")
	conn, err := sqlite.OpenConn(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlitex.ExecuteTransient(conn, "CREATE TABLE messages (seq INTEGER PRIMARY KEY);", nil); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if p, err := sqlitedocs.Open(path); !errors.Is(err, sdk.ErrInvalid) {
		if p != nil {
			p.Close()
		}
		t.Fatalf("Open of a foreign database = %v, want sdk.ErrInvalid", err)
	}
	conn, err = sqlite.OpenConn(path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n, err := sqlitex.ResultInt(conn.Prep("SELECT count(*) FROM sqlite_schema WHERE name = 'documents';"))
	if err != nil || n != 0 {
		t.Errorf("documents table in the foreign database: %d, %v; want none", n, err)
	}
}
