package docs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/store/pgtest"
)

// TestMain removes the plugin binaries the tests built (testkit.Build).
// The shared PostgreSQL cluster, if a test started one, stops with the
// test binary (pgtest's watchdog).
func TestMain(m *testing.M) { testkit.Main(m) }

// pluginsDirWith returns a fresh plugins directory holding the first-party
// plugin cmd/<name>, built on first use.
func pluginsDirWith(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	testkit.Install(t, testkit.Build(t, "cmd/"+name), dir, name)
	return dir
}

// daemonDocs returns the document providers of a daemon on its own home
// with the plugins of dirs, its catalog scanned.
func daemonDocs(t *testing.T, dirs ...string) *DocProviders {
	t.Helper()
	home, runtime := t.TempDir(), testkit.ShortTempDir(t)
	c := catalog.NewCatalog(dirs, catalog.VerifiedDir(home), runtime, 0, hclog.NewNullLogger())
	c.Scan(t.Context())
	for _, p := range c.List() {
		if p.Error != "" {
			t.Fatalf("plugin %s: %s", p.Path, p.Error)
		}
	}
	d := NewDocProviders(home, c, nil, hclog.NewNullLogger())
	t.Cleanup(func() { d.Close() })
	return d
}

func resolve(t *testing.T, d *DocProviders, wf store.Workflow) docprovider.Provider {
	t.Helper()
	p, err := d.Resolve(t.Context(), wf)
	if err != nil {
		t.Fatalf("Resolve %s:%s (provider %q): %v", wf.Name, wf.Tag, wf.DocsProvider, err)
	}
	return p
}

var notesRef = docprovider.Ref{Workflow: "review", Tag: "main", Path: "notes.md"}

// In a cluster, a workflow that names no documents provider keeps its
// documents in the shared PostgreSQL database through the postgres
// plugin: what one daemon writes, another reads, and neither writes files.
func TestClusterDocumentsDefaultToThePostgresPlugin(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	plugins := pluginsDirWith(t, "agent-worker-docs-postgres")
	a, b := daemonDocs(t, plugins), daemonDocs(t, plugins)
	a.UseStore(dsn)
	b.UseStore(dsn)
	wfA := store.Workflow{Name: "review", Tag: "main", Workdir: t.TempDir()}
	wfB := store.Workflow{Name: "review", Tag: "main", Workdir: t.TempDir()} // its file's checkout on the other machine
	if err := resolve(t, a, wfA).Write(t.Context(), notesRef, "written on daemon a"); err != nil {
		t.Fatal(err)
	}
	if got, err := resolve(t, b, wfB).Read(t.Context(), notesRef); err != nil || got != "written on daemon a" {
		t.Errorf("daemon b reads %q, %v; want daemon a's text", got, err)
	}
	for _, wf := range []store.Workflow{wfA, wfB} {
		if _, err := os.Stat(filepath.Join(wf.Workdir, ".workflow")); !os.IsNotExist(err) {
			t.Errorf("documents folder beside the workflow: %v; want none (the documents are in PostgreSQL)", err)
		}
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var content string
	if err := conn.QueryRow(t.Context(), `SELECT convert_from(content, 'UTF8') FROM agent_worker_docs.documents
		WHERE workflow = 'review' AND tag = 'main' AND path = 'notes.md'`).Scan(&content); err != nil || content != "written on daemon a" {
		t.Errorf("the document in PostgreSQL: %q, %v", content, err)
	}
	if n := len(a.plugins); n != 1 {
		t.Errorf("daemon a runs %d docs plugins, want the one postgres plugin", n)
	}
}

// What a workflow resolves to without the postgres plugin at hand: named
// providers keep working in a cluster, a daemon on SQLite is unchanged,
// and a missing plugin is an error that names it.
func TestDocsProviderChoice(t *testing.T) {
	t.Parallel()
	const cluster = "postgres://agentworker@db.invalid:5432/agentworker" // never dialled
	for name, tc := range map[string]struct {
		store    string
		provider string
		docsDir  bool   // the workflow names its documents folder
		want     string // "file", "sqlite", or the error's text
	}{
		"cluster keeps file":            {store: cluster, provider: "file", want: "file"},
		"cluster keeps sqlite":          {store: cluster, provider: "sqlite", want: "sqlite"},
		"cluster keeps a named folder":  {store: cluster, docsDir: true, want: "file"},
		"cluster, plugin missing":       {store: cluster, want: "names no documents provider, so on a PostgreSQL store (--store postgres://…) its documents go to that database, shared by every daemon, but the plugin agent-worker-docs-postgres is not installed"},
		"cluster, named, plugin absent": {store: cluster, provider: "postgres", want: "uses documents provider postgres but the plugin agent-worker-docs-postgres is not installed"},
		"sqlite store defaults to file": {want: "file"},
		"sqlite store refuses postgres": {provider: "postgres", want: "this daemon keeps its state in SQLite: start it with --store postgres://"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := daemonDocs(t)
			if tc.store != "" {
				d.UseStore(tc.store)
			}
			wf := store.Workflow{Name: "review", Tag: "main", Workdir: t.TempDir(), DocsProvider: tc.provider}
			if tc.docsDir {
				wf.DocsDir = t.TempDir()
			}
			p, err := d.Resolve(t.Context(), wf)
			if tc.want != "file" && tc.want != "sqlite" {
				if api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(fmt.Sprint(err), tc.want) {
					t.Fatalf("Resolve = %v (%s), want an invalid-request error containing %q", err, api.ErrorCode(err), tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Write(t.Context(), notesRef, "x"); err != nil {
				t.Fatal(err)
			}
			where := map[string]string{
				"file":   filepath.Join(wf.Workdir, ".workflow", "review", "main", "documents", "notes.md"),
				"sqlite": filepath.Join(d.home, docsFile),
			}[tc.want]
			if tc.docsDir {
				where = filepath.Join(wf.DocsDir, "notes.md")
			}
			if _, err := os.Stat(where); err != nil {
				t.Errorf("the %s provider's document: %v", tc.want, err)
			}
		})
	}
}
