package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/contract"
)

// seedMessages makes a closed database file at path with n messages in
// @global, enough to spread the messages table over many pages.
func seedMessages(t *testing.T, path string, n int) {
	t.Helper()
	db, err := Open(t.Context(), path, Options{PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	createTeam(t, db, Scope{"global", "main"}, "alice")
	var ms []NewMessage
	for i := range n {
		ms = append(ms, NewMessage{Workflow: "global", Tag: "main", Sender: "alice", Content: fmt.Sprintf("message %d %s", i, strings.Repeat("x", 200))})
	}
	if _, err := db.AppendMessages(t.Context(), ms); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// damageTable overwrites some pages of table in the file at path with
// random bytes, as a failing disk or a stray write would, and returns the
// file's hash afterwards.
func damageTable(t *testing.T, path, table string, pages int) [32]byte {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	var found []int
	var pageSize int
	err = sqlitex.ExecuteTransient(conn, "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno",
		&sqlitex.ExecOptions{Args: []any{table}, ResultFunc: func(s *sqlite.Stmt) error {
			found = append(found, s.ColumnInt(0))
			return nil
		}})
	if err == nil {
		pageSize, err = sqlitex.ResultInt(conn.Prep("PRAGMA page_size"))
	}
	conn.Close()
	if err != nil || len(found) < pages {
		t.Fatalf("pages of %s: %v, %v", table, found, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, pageSize)
	for i := range pages {
		for j := range garbage {
			garbage[j] = byte(r.Uint32())
		}
		pg := found[(i+1)*len(found)/(pages+1)] // spread over the table
		if _, err := f.WriteAt(garbage, int64(pg-1)*int64(pageSize)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return fileHash(t, path)
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// A file with damaged pages is refused at open with its name and what to
// do, and left exactly as it was (issue 27, item 4).
func TestOpenRefusesDamagedFile(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "the SQLite file's pages")
	path := testPath(t)
	seedMessages(t, path, 2000)
	before := damageTable(t, path, "messages", 3)

	db, err := Open(t.Context(), path, Options{PoolSize: 2})
	if err == nil {
		db.Close()
		t.Fatal("Open used a damaged file")
	}
	msg := err.Error()
	for _, want := range []string{"the database file " + path + " is damaged (quick_check: ", "the daemon will not use it",
		"agent-worker backup", "sqlite3 " + path + " .dump | sed ", "sqlite3 " + path + " .recover | sqlite3 ", path + "-wal",
		"docs/troubleshooting.md"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Open's error does not say %q:\n%s", want, msg)
		}
	}
	if !errors.Is(err, ErrDamaged) || strings.Contains(msg, "\n") {
		t.Errorf("Open's error = %q; want ErrDamaged on one line", msg)
	}
	if fileHash(t, path) != before {
		t.Error("Open changed the damaged file")
	}
	for _, f := range []string{path + "-wal", path + "-shm"} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Open left %s behind: %v", f, err)
		}
	}
}

// The route the refusal offers for a file with no backup works with the
// sqlite3 the system ships (Debian 12's has no .recover that works): the
// file DumpCommand writes opens, passes the check and keeps the messages
// SQLite could still read (issue 41, item 6).
func TestDumpCommandRecoversADamagedFile(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "the SQLite file's pages")
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("no sqlite3 on PATH: the route runs the sqlite3 shell")
	}
	path := testPath(t)
	seedMessages(t, path, 2000)
	damageTable(t, path, "messages", 3)
	recovered := filepath.Join(t.TempDir(), "recovered.db")
	if out, err := exec.Command("sh", "-c", DumpCommand(path, recovered)).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", DumpCommand(path, recovered), err, out)
	}
	db, err := Open(t.Context(), recovered, Options{PoolSize: 2, CheckIntegrity: true})
	if err != nil {
		t.Fatalf("open the recovered file: %v", err)
	}
	defer db.Close()
	last, err := db.LatestSeq(t.Context(), Scope{"global", "main"})
	if err != nil || last != 2000 {
		t.Errorf("recovered file's last message = %d, %v; want 2000 (the pages after the damage are kept)", last, err)
	}
}

// A file whose header is not a database's is refused the same way.
func TestOpenRefusesNotADatabase(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "the SQLite file's header")
	path := testPath(t)
	seedMessages(t, path, 10)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, 100), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Open(t.Context(), path, Options{PoolSize: 2})
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "the database file "+path+" is damaged (its header is not an SQLite database's") {
		t.Errorf("Open of a file with a garbage header = %v; want it refused as damaged", err)
	}
}

// CheckIntegrity (--check-store) finds what quick_check does not: an
// index that disagrees with its table.
func TestCheckIntegrityFindsIndexDamage(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "SQLite's integrity_check")
	path := testPath(t)
	seedMessages(t, path, 200)
	// Redefine an index without rebuilding it: its entries no longer match
	// what the table says they should be.
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	var def string
	err = sqlitex.ExecuteTransient(conn, "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'messages' AND sql IS NOT NULL LIMIT 1",
		&sqlitex.ExecOptions{ResultFunc: func(s *sqlite.Stmt) error { def = s.ColumnText(0); return nil }})
	if err == nil {
		err = sqlitex.ExecuteScript(conn, `PRAGMA writable_schema = ON;
			UPDATE sqlite_schema SET sql = 'CREATE INDEX `+def+` ON messages(content)' WHERE name = '`+def+`';`, nil)
	}
	conn.Close()
	if err != nil || def == "" {
		t.Fatalf("redefine an index of messages (%q): %v", def, err)
	}

	db, err := Open(t.Context(), path, Options{PoolSize: 2})
	if err != nil {
		t.Fatalf("quick_check refused what it does not look at: %v", err)
	}
	db.Close()
	_, err = Open(t.Context(), path, Options{PoolSize: 2, CheckIntegrity: true})
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "integrity_check: ") || !strings.Contains(err.Error(), def) {
		t.Errorf("Open with CheckIntegrity = %v; want it refused, naming index %s", err, def)
	}
}

// Damage found while the daemon runs makes reads and writes unavailable
// with the file named and what to do, never an internal error, and is a
// state Health reports from the first time it was seen.
func TestDamageAtRunTimeIsUnavailable(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "the SQLite file's pages")
	path := testPath(t)
	seedMessages(t, path, 2000)
	c := &clock{}
	c.Set(fromMs(1_700_000_000_000))
	db := openAt(t, path, Options{PoolSize: 2, Now: c.Now})
	if h := db.Health(); h.Corrupt != "" {
		t.Fatalf("health before = %+v", h)
	}
	damageTable(t, path, "messages", 3)

	var err error
	for _, o := range []ReadOptions{{Limit: 1000}, {SinceSeq: 1, Limit: 1000}} { // the newest half, then the oldest
		if _, err = db.ReadChannel(t.Context(), Scope{"global", "main"}, o); err != nil {
			break
		}
	}
	if contract.ErrorCode(err) != contract.CodeUnavailable || !strings.Contains(err.Error(), "the database file "+path+" is damaged") ||
		!strings.Contains(err.Error(), "agent-worker stop --all") || !strings.Contains(err.Error(), "agent-worker backup") {
		t.Fatalf("a read of a damaged table = %v (code %q); want unavailable naming the file and what to do", err, contract.ErrorCode(err))
	}
	h := db.Health()
	if h.Corrupt == "" || !h.CorruptSince.Equal(c.Now()) {
		t.Errorf("health after = %+v; want the damage and when it was seen", h)
	}
	c.Set(c.Now().Add(time.Minute))
	err = db.write(t.Context(), func(q querier) error {
		return q.execute("UPDATE messages SET content = content || '!'", nil)
	})
	if contract.ErrorCode(err) != contract.CodeUnavailable || !strings.Contains(err.Error(), "is damaged") {
		t.Errorf("a write over the damaged table = %v; want unavailable, damaged", err)
	}
	if h2 := db.Health(); !h2.CorruptSince.Equal(h.CorruptSince) {
		t.Errorf("CorruptSince moved from %v to %v; want the first time", h.CorruptSince, h2.CorruptSince)
	}
}

// PostgreSQL's own reports of damaged data are the same state.
func TestCorruptClassification(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"data corrupted":   {&pgconn.PgError{Code: "XX001"}, true},
		"index corrupted":  {&pgconn.PgError{Code: "XX002"}, true},
		"undefined table":  {&pgconn.PgError{Code: "42P01"}, false},
		"plain error":      {errors.New("malformed"), false},
		"cancelled":        {context.Canceled, false},
		"wrapped and none": {fmt.Errorf("read: %w", errors.New("x")), false},
	} {
		if got := corrupt(tc.err); got != tc.want {
			t.Errorf("%s: corrupt = %v, want %v", name, got, tc.want)
		}
	}
}

// Backup writes a private, sound, self-contained copy that a store opens
// with everything in it; it refuses to overwrite without force, and
// paths it must not write.
func TestBackup(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "backup copies the SQLite file")
	path := testPath(t)
	seedMessages(t, path, 500)
	db := openAt(t, path, Options{PoolSize: 2})
	ctx := t.Context()
	dst := filepath.Join(t.TempDir(), "backup.db")

	info, err := db.Backup(ctx, dst, false)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dst)
	if err != nil || info.Path != dst || info.Bytes != fi.Size() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup = %+v; file %v, %v; want the file, its size, mode 0600", info, fi, err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), "*")); len(left) != 1 {
		t.Errorf("backup left files beside it: %v", left)
	}
	_, err = db.Backup(ctx, dst, false)
	if contract.ErrorCode(err) != contract.CodeConflict || !strings.Contains(err.Error(), "--force") {
		t.Errorf("backup over an existing file = %v; want a conflict that mentions --force", err)
	}
	send(t, db, NewMessage{Workflow: "global", Tag: "main", Sender: "alice", Content: "after the first backup"})
	if _, err := db.Backup(ctx, dst, true); err != nil {
		t.Fatalf("backup --force: %v", err)
	}
	for name, bad := range map[string]string{
		"relative":         "backup.db",
		"missing dir":      filepath.Join(t.TempDir(), "nope", "b.db"),
		"the database":     path,
		"the database wal": path + "-wal",
		"a directory":      t.TempDir(),
	} {
		if _, err := db.Backup(ctx, bad, true); contract.ErrorCode(err) != contract.CodeInvalid {
			t.Errorf("%s: backup to %s = %v; want invalid", name, bad, err)
		}
	}

	copied := openAt(t, dst, Options{PoolSize: 2})
	ms := readChannel(t, copied, Scope{"global", "main"}, ReadOptions{Limit: 1000})
	if len(ms) != 501 || ms[len(ms)-1].Content != "after the first backup" {
		t.Errorf("the backup holds %d messages, last %q; want 501, the last sent before it", len(ms), ms[len(ms)-1].Content)
	}
}

// On PostgreSQL, backup refuses with the pg_dump command that does the
// job there, without the password.
func TestBackupOnPostgresNamesPgDump(t *testing.T) {
	t.Parallel()
	if testEngine != "postgres" {
		t.Skip("PostgreSQL only: run with AGENT_WORKER_TEST_STORE=postgres (make test-e2e does)")
	}
	db := openTest(t)
	dst := filepath.Join(t.TempDir(), "b.db")
	_, err := db.Backup(t.Context(), dst, false)
	if contract.ErrorCode(err) != contract.CodeInvalid || !strings.Contains(err.Error(), `pg_dump "postgres://`) || strings.Contains(err.Error(), "xxxxx") {
		t.Errorf("backup on PostgreSQL = %v; want invalid, with the pg_dump command and no password", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("backup on PostgreSQL wrote %s: %v", dst, err)
	}
	if got := withoutPassword("postgres://aw:secret@db.example:5432/aw?sslmode=disable"); got != "postgres://aw@db.example:5432/aw?sslmode=disable" {
		t.Errorf("withoutPassword = %q", got)
	}
}
