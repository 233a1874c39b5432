package postgresdocs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	postgresdocs "github.com/agent-worker/agent-worker/docs-provider/postgres"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/docprovidertest"
	"github.com/agent-worker/agent-worker/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func open(t *testing.T, dsn string) *postgresdocs.Provider {
	t.Helper()
	p, err := postgresdocs.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// connect is a plain connection to look at the database behind the
// provider's back.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

var notes = docprovider.Ref{Workflow: "review", Tag: "main", Path: "notes.md"}

func TestConformance(t *testing.T) {
	docprovidertest.Run(t, func(t *testing.T) docprovider.Provider {
		return open(t, pgtest.Shared(t).NewDatabase(t))
	})
}

// Two daemons of a cluster each run a provider on the one database: what
// one writes, the other reads, and their appends to one document all land.
func TestDaemonsShareDocuments(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	a, b := open(t, dsn), open(t, dsn)
	ctx := t.Context()
	if err := a.Write(ctx, notes, "from a\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Read(ctx, notes); err != nil || got != "from a\n" {
		t.Fatalf("b reads a's write: %q, %v", got, err)
	}
	if err := b.Create(ctx, notes, "b's claim"); !errors.Is(err, sdk.ErrConflict) {
		t.Errorf("b creates a document a wrote: %v, want sdk.ErrConflict", err)
	}
	const each = 25
	var wg sync.WaitGroup
	for name, p := range map[string]*postgresdocs.Provider{"a": a, "b": b} {
		wg.Go(func() {
			for i := range each {
				if err := p.Append(ctx, notes, fmt.Sprintf("%s %02d\n", name, i)); err != nil {
					t.Errorf("%s appends: %v", name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := a.Read(ctx, notes)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 1+2*each || lines[0] != "from a" {
		t.Fatalf("after the appends of both daemons: %d lines, first %q; want %d, first %q", len(lines), lines[0], 1+2*each, "from a")
	}
	slices.Sort(lines[1:])
	for i, line := range lines[1:] {
		if want := fmt.Sprintf("%s %02d", string(rune('a'+i/each)), i%each); line != want {
			t.Fatalf("sorted line %d = %q, want %q", i, line, want)
		}
	}
	list, err := b.List(ctx, docprovider.Scope{Workflow: "review", Tag: "main"})
	if err != nil || len(list) != 1 || list[0].Path != "notes.md" || list[0].Size != int64(len(got)) {
		t.Errorf("b lists %+v, %v; want notes.md of %d bytes", list, err, len(got))
	}
}

// Daemons that start together open the provider together: the advisory
// lock lets one create the schema while the others wait, and none fails.
func TestConcurrentOpen(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, err := postgresdocs.Open(t.Context(), dsn)
			if err != nil {
				t.Errorf("Open %d: %v", i, err)
				return
			}
			defer p.Close()
			if err := p.Append(t.Context(), notes, "x"); err != nil {
				t.Errorf("Append %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	p := open(t, dsn)
	if got, err := p.Read(t.Context(), notes); err != nil || got != strings.Repeat("x", n) {
		t.Errorf("Read = %q, %v; want %d x", got, err, n)
	}
}

// Documents outlive the process: a provider restarted by the daemon sees
// what the previous one wrote.
func TestDocumentsSurviveReopen(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	p, err := postgresdocs.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(t.Context(), notes, "before"); err != nil {
		t.Fatal(err)
	}
	if err := p.Append(t.Context(), notes, " restart"); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p = open(t, dsn)
	if got, err := p.Read(t.Context(), notes); err != nil || got != "before restart" {
		t.Errorf("Read after reopen = %q, %v; want %q", got, err, "before restart")
	}
	if err := p.Create(t.Context(), notes, "again"); !errors.Is(err, sdk.ErrConflict) {
		t.Errorf("Create after reopen = %v, want sdk.ErrConflict", err)
	}
}

// The store's tables share the database: the provider keeps to its own
// schema and creates nothing anywhere else.
func TestKeepsToItsSchema(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	conn := connect(t, dsn)
	if _, err := conn.Exec(t.Context(), "CREATE TABLE public.documents (seq BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	p := open(t, dsn)
	if err := p.Write(t.Context(), notes, "x"); err != nil {
		t.Fatal(err)
	}
	rows, _ := conn.Query(t.Context(), `SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{postgresdocs.Schema + ".documents", "public.documents"}; !slices.Equal(tables, want) {
		t.Errorf("tables = %v, want %v", tables, want)
	}
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM public.documents").Scan(&n); err != nil || n != 0 {
		t.Errorf("rows in public.documents: %d, %v; want none", n, err)
	}
}

// A documents table that another program made in our schema is refused
// before anything is written to it.
func TestRefusesForeignTable(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	conn := connect(t, dsn)
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+postgresdocs.Schema+"; CREATE TABLE "+postgresdocs.Schema+".documents (id BIGINT)"); err != nil {
		t.Fatal(err)
	}
	if p, err := postgresdocs.Open(t.Context(), dsn); !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "not an agent-worker documents table") {
		if p != nil {
			p.Close()
		}
		t.Fatalf("Open over a foreign table = %v, want sdk.ErrInvalid saying whose table it is not", err)
	}
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0",
		postgresdocs.Schema+".documents").Scan(&n); err != nil || n != 1 {
		t.Errorf("the foreign table has %d columns (%v) after Open, want its 1", n, err)
	}
}

// Listings are in byte order even in a database whose collation sorts
// otherwise (ICU's en-US puts "a" before "B" and ignores punctuation).
func TestListByteOrderUnderICUCollation(t *testing.T) {
	t.Parallel()
	c := pgtest.Shared(t)
	admin := connect(t, c.DSN("postgres"))
	name := "icu_docs_order"
	if _, err := admin.Exec(t.Context(), "CREATE DATABASE "+name+" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'"); err != nil {
		t.Skipf("no ICU collation in this PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	p := open(t, c.DSN(name))
	scope := docprovider.Scope{Workflow: "review", Tag: "main"}
	for _, path := range []string{"a.md", "B.md", "specs/api.md", "specs-old.md"} {
		if err := p.Write(t.Context(), docprovider.Ref{Workflow: scope.Workflow, Tag: scope.Tag, Path: path}, "x"); err != nil {
			t.Fatal(err)
		}
	}
	list, err := p.List(t.Context(), scope)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range list {
		got = append(got, in.Path)
	}
	if want := []string{"B.md", "a.md", "specs-old.md", "specs/api.md"}; !slices.Equal(got, want) {
		t.Errorf("List = %v, want byte order %v", got, want)
	}
}

// A malformed URL is refused at once, without echoing the password.
func TestMalformedURL(t *testing.T) {
	t.Parallel()
	p, err := postgresdocs.New("postgres://docs:s3cret@127.0.0.1:notaport/db")
	if !errors.Is(err, sdk.ErrInvalid) {
		if p != nil {
			p.Close()
		}
		t.Fatalf("New = %v, want sdk.ErrInvalid", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q shows the password", err)
	}
}

// A provider whose server is down answers "unavailable, try again" and
// recovers by itself once the server is back: the plugin needs no restart.
func TestRecoversWhenTheServerComesBack(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	srv, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	addr := testkit.FreeAddr(t) // nothing listens there now: the server is "down"
	down := *srv
	down.Host = addr
	down.User = url.UserPassword(srv.User.Username(), "s3cret")
	p, err := postgresdocs.New(down.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	_, err = p.Read(t.Context(), notes)
	if !errors.Is(err, sdk.ErrUnavailable) {
		t.Fatalf("Read with the server down = %v, want sdk.ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q shows the password", err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken by another process meanwhile: %v", addr, err)
	}
	forward(t, l, srv.Host)
	if err := p.Write(t.Context(), notes, "back"); err != nil {
		t.Fatalf("Write once the server is back: %v", err)
	}
	if got, err := p.Read(t.Context(), notes); err != nil || got != "back" {
		t.Errorf("Read = %q, %v; want %q", got, err, "back")
	}
}

// forward relays every connection l accepts to to, until the test ends.
func forward(t *testing.T, l net.Listener, to string) {
	var wg sync.WaitGroup
	var mu sync.Mutex // guards conns
	var conns []net.Conn
	track := func(c net.Conn) { mu.Lock(); conns = append(conns, c); mu.Unlock() }
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Go(func() { io.Copy(out, in); out.Close() })
			wg.Go(func() { io.Copy(in, out); in.Close() })
		}
	})
}
