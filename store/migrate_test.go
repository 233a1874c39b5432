package store

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func file(sql string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(sql)} }

// openErr opens path with migrations and returns the error.
func openErr(t *testing.T, path string, migrations fstest.MapFS) error {
	t.Helper()
	db, err := Open(t.Context(), path, Options{Migrations: migrations})
	if err == nil {
		db.Close()
	}
	return err
}

// wantErr fails unless err mentions every one of parts.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func TestTamperedHistoryRefused(t *testing.T) {
	t.Parallel()
	path := testPath(t)
	db, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, `UPDATE migration_history SET sha256 = 'x' WHERE name = '0001_init.sql'`)
	db.Close()

	_, err = Open(t.Context(), path, Options{})
	wantErr(t, err, "0001_init.sql", "changed after it was applied")
}

func TestMigrationRunner(t *testing.T) {
	t.Parallel()
	v1 := fstest.MapFS{
		// A trailing comment must not break the script runner.
		"0001_a.sql": file("CREATE TABLE a (x INTEGER);\nINSERT INTO a VALUES (1);\n-- done\n"),
	}

	t.Run("changed file", func(t *testing.T) {
		t.Parallel()
		path := testPath(t)
		if err := openErr(t, path, v1); err != nil {
			t.Fatal(err)
		}
		err := openErr(t, path, fstest.MapFS{"0001_a.sql": file("CREATE TABLE a (y TEXT);")})
		wantErr(t, err, "migration 0001_a.sql was changed", "restore the original file")
	})

	t.Run("unknown applied migration", func(t *testing.T) {
		t.Parallel()
		path := testPath(t)
		v2 := fstest.MapFS{"0001_a.sql": v1["0001_a.sql"], "0002_b.sql": file("CREATE TABLE b (x);")}
		if err := openErr(t, path, v2); err != nil {
			t.Fatal(err)
		}
		wantErr(t, openErr(t, path, v1), "0002_b.sql", "newer agent-worker")
	})

	t.Run("new migration sorts before an applied one", func(t *testing.T) {
		t.Parallel()
		path := testPath(t)
		if err := openErr(t, path, fstest.MapFS{"0001_a.sql": v1["0001_a.sql"], "0003_c.sql": file("CREATE TABLE c (x);")}); err != nil {
			t.Fatal(err)
		}
		err := openErr(t, path, fstest.MapFS{
			"0001_a.sql": v1["0001_a.sql"], "0002_b.sql": file("CREATE TABLE b (x);"), "0003_c.sql": file("CREATE TABLE c (x);"),
		})
		wantErr(t, err, "0002_b.sql", "0003_c.sql")
	})

	t.Run("bad file names", func(t *testing.T) {
		t.Parallel()
		for _, name := range []string{"1_a.sql", "0001_A.sql", "0001-a.sql", "0001_a.txt", "README.md"} {
			fsys := fstest.MapFS{"0001_a.sql": v1["0001_a.sql"], name: file("SELECT 1;")}
			wantErr(t, openErr(t, testPath(t), fsys), name)
		}
	})

	t.Run("failing migration is rolled back whole", func(t *testing.T) {
		t.Parallel()
		path := testPath(t)
		err := openErr(t, path, fstest.MapFS{
			"0001_a.sql": v1["0001_a.sql"],
			"0002_b.sql": file("CREATE TABLE partial (x);\nINSERT INTO no_such_table VALUES (1);"),
		})
		wantErr(t, err, "0002_b.sql", "line 2", "no_such_table")

		// The database is still usable at version 1, with nothing of 0002.
		db := openAt(t, path, Options{Migrations: v1})
		var names []string
		for _, h := range readHistory(t, db) {
			names = append(names, h.Name)
		}
		if diff := cmp.Diff([]string{"0001_a.sql"}, names); diff != "" {
			t.Errorf("migration_history (-want +got):\n%s", diff)
		}
		if n := queryInt(t, db, `SELECT count(*) FROM sqlite_schema WHERE name = 'partial'`); n != 0 {
			t.Error("table partial of the failed migration exists")
		}
		if n := queryInt(t, db, `SELECT count(*) FROM a`); n != 1 {
			t.Errorf("table a has %d rows, want 1", n)
		}
	})

	t.Run("foreign key violation", func(t *testing.T) {
		t.Parallel()
		err := openErr(t, testPath(t), fstest.MapFS{
			"0001_a.sql": file("CREATE TABLE p (id INTEGER PRIMARY KEY);\nCREATE TABLE c (p INTEGER REFERENCES p (id));\nINSERT INTO c VALUES (7);"),
		})
		wantErr(t, err, "0001_a.sql", "foreign key", "rows of c")
	})
}

func TestOnlyComments(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"":                              true,
		" ;\n\t;":                       true,
		"-- a\n-- b":                    true,
		"/* a */ -- b\n":                true,
		"/* unterminated":               true,
		"/*/ SELECT 1;":                 true, // still inside the comment
		"-- a\nSELECT 1;":               false,
		"/* a */SELECT 1":               false,
		"; CREATE TABLE t (x);":         false,
		"/**/ INSERT INTO t VALUES (1)": false,
	} {
		if got := onlyComments(s); got != want {
			t.Errorf("onlyComments(%q) = %v, want %v", s, got, want)
		}
	}
}
