package pgtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agent-worker/agent-worker/internal/pgserver"
)

func TestMain(m *testing.M) { Main(m) }

// Two databases of the shared cluster are apart (a table made in one is not
// in the other), and both are gone once the test that made them ends.
func TestSharedDatabases(t *testing.T) {
	c := Shared(t)
	ctx := context.Background()
	var names []string
	t.Run("use", func(t *testing.T) {
		dsns := []string{c.NewDatabase(t), c.NewDatabase(t)}
		for i, dsn := range dsns {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatalf("connect to database %d: %v", i, err)
			}
			t.Cleanup(func() { conn.Close(context.Background()) })
			var name string
			if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(dsn, "/"+name+"?sslmode=disable") {
				t.Errorf("DSN %s connected to database %q", dsn, name)
			}
			names = append(names, name)
			if i == 0 {
				if _, err := conn.Exec(ctx, "CREATE TABLE only_in_first (x BIGINT)"); err != nil {
					t.Fatal(err)
				}
				continue
			}
			var found *string
			if err := conn.QueryRow(ctx, "SELECT to_regclass('only_in_first')::text").Scan(&found); err != nil {
				t.Fatal(err)
			}
			if found != nil {
				t.Errorf("the second database sees the first one's table %s", *found)
			}
		}
		if names[0] == names[1] {
			t.Errorf("both databases are named %s", names[0])
		}
	})

	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, "SELECT datname FROM pg_database")
	all, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if slices.Contains(all, name) {
			t.Errorf("database %s is still there after its test ended", name)
		}
	}
}

func TestDatabaseName(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		n    int64
		test string
		want string
	}{
		"subtest":  {3, "TestFoo/Bar-baz", "t3_testfoo_bar_baz"},
		"too long": {12, strings.Repeat("A", 80), "t12_" + strings.Repeat("a", 59)},
	} {
		if got := databaseName(tc.n, tc.test); got != tc.want {
			t.Errorf("%s: databaseName(%d, %q) = %q, want %q", name, tc.n, tc.test, got, tc.want)
		}
	}
}

// tbRecorder records how fail ends a test.
type tbRecorder struct {
	testing.TB
	skipped, failed string
}

func (r *tbRecorder) Helper()                   {}
func (r *tbRecorder) Skipf(f string, a ...any)  { r.skipped = fmt.Sprintf(f, a...) }
func (r *tbRecorder) Fatalf(f string, a ...any) { r.failed = fmt.Sprintf(f, a...) }

// A machine without PostgreSQL skips, unless CI said the server must be
// there; a cluster that fails to start always fails.
func TestFail(t *testing.T) {
	for name, tc := range map[string]struct {
		require string
		err     error
		skip    bool
	}{
		"missing, skip":             {"", pgserver.Unavailable("PostgreSQL binaries (initdb, pg_ctl) not found"), true},
		"missing, required":         {"1", pgserver.Unavailable("PostgreSQL binaries (initdb, pg_ctl) not found"), false},
		"no postgres user, skip":    {"", pgserver.Unavailable("running as root, and there is no postgres user"), true},
		"start failed, not skipped": {"", errors.New("pg_ctl start: exit status 1"), false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(EnvRequire, tc.require)
			r := &tbRecorder{TB: t}
			fail(r, tc.err)
			if got := r.skipped != ""; got != tc.skip {
				t.Errorf("skipped %v (%q), want %v", got, r.skipped, tc.skip)
			}
			if got := r.failed != ""; got == tc.skip {
				t.Errorf("failed %v (%q), want %v", got, r.failed, !tc.skip)
			}
			if msg := r.skipped + r.failed; !strings.Contains(msg, tc.err.Error()) {
				t.Errorf("message %q does not give the reason %q", msg, tc.err)
			}
		})
	}
}
