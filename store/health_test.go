package store

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/contract"
)

// fill writes a megabyte, so that a full disk shows.
func fill(db *DB) error {
	return db.write(context.Background(), func(conn querier) error {
		if err := sqlitex.ExecuteTransient(rawSQLite(conn), `CREATE TABLE IF NOT EXISTS filler (b BLOB)`, nil); err != nil {
			return err
		}
		return sqlitex.ExecuteTransient(rawSQLite(conn), `INSERT INTO filler VALUES (zeroblob(1000000))`, nil)
	})
}

// setMaxPages caps the database's size on the store's writer connection:
// SQLite then fails growing writes with SQLITE_FULL, exactly as on a full
// disk. (A PRAGMA is not a transaction, so it runs outside db.write.)
func setMaxPages(t *testing.T, db *DB, pages string) {
	t.Helper()
	done := make(chan error, 1)
	r := &writeReq{fn: func(conn querier) error {
		done <- sqlitex.ExecuteTransient(rawSQLite(conn), "PRAGMA max_page_count = "+pages, nil)
		return nil
	}, done: make(chan error, 1)}
	db.w.reqs <- r
	<-r.done
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestHealthRecordsWriteFailures(t *testing.T) {
	sqliteOnly(t, "a full disk, made with a SQLite page limit")
	t.Parallel()
	db := openAt(t, testPath(t), Options{PoolSize: 1})
	if err := fill(db); err != nil {
		t.Fatal(err)
	}
	if h := db.Health(); !h.Linked || h.Failing() || h.LastWriteAt.IsZero() {
		t.Errorf("health after a good write = %+v", h)
	}
	n := queryInt(t, db, "PRAGMA page_count")
	setMaxPages(t, db, strconv.Itoa(n))
	err := fill(db)
	if contract.ErrorCode(err) != contract.CodeUnavailable || !strings.Contains(err.Error(), "cannot be written") || !strings.Contains(err.Error(), "free disk space") {
		t.Fatalf("write on a full database = %v (code %q), want unavailable saying what to do", err, contract.ErrorCode(err))
	}
	h := db.Health()
	if !h.Failing() || h.LastError != err.Error() || h.LastErrorAt.IsZero() || !h.Linked {
		t.Errorf("health after a failed write = %+v", h)
	}
	// A request's own mistake is not a storage failure.
	if err := db.write(t.Context(), func(conn querier) error {
		return sqlitex.ExecuteTransient(rawSQLite(conn), "INSERT INTO no_such_table VALUES (1)", nil)
	}); err == nil || contract.ErrorCode(err) == contract.CodeUnavailable {
		t.Errorf("bad statement = %v, want a plain error", err)
	}
	setMaxPages(t, db, "1073741823")
	if err := fill(db); err != nil {
		t.Fatal(err)
	}
	if h := db.Health(); h.Failing() || h.LastError == "" {
		t.Errorf("health after recovering = %+v, want the old error kept but not failing", h)
	}
}

func TestDeletedOrReplacedFileRefusesWrites(t *testing.T) {
	sqliteOnly(t, "the database file deleted under the daemon")
	t.Parallel()
	for name, swap := range map[string]func(path string) error{
		"deleted": os.Remove,
		"replaced": func(path string) error {
			if err := os.WriteFile(path+".new", nil, 0o600); err != nil {
				return err
			}
			return os.Rename(path+".new", path)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := openAt(t, testPath(t), Options{PoolSize: 2})
			if err := fill(db); err != nil {
				t.Fatal(err)
			}
			if err := swap(db.Path()); err != nil {
				t.Fatal(err)
			}
			err := fill(db)
			if contract.ErrorCode(err) != contract.CodeUnavailable || !strings.Contains(err.Error(), db.Path()+" was deleted or replaced") || !strings.Contains(err.Error(), "restart the daemon") {
				t.Fatalf("write after the file was %s = %v (code %q)", name, err, contract.ErrorCode(err))
			}
			if h := db.Health(); h.Linked || !h.Failing() || h.LastError != err.Error() {
				t.Errorf("health = %+v", h)
			}
			if n := queryInt(t, db, "SELECT count(*) FROM filler"); n != 1 {
				t.Errorf("rows after the refused write = %d, want 1", n)
			}
		})
	}
}
