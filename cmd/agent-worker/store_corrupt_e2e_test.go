package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
)

// Issue 27, item 4: a damaged SQLite file is refused at start with the
// file named and what to do, a damage found while the daemon runs is a
// store state status shows (and 503, never "internal error"), and
// `agent-worker backup` makes the copy to restore.

// seedChannel sends n messages of about 1 kB to @global through the
// running daemon's API, enough to spread the messages table over a
// hundred pages.
func seedChannel(t *testing.T, c *cli, n int) {
	t.Helper()
	client := c.client()
	for i := range n {
		if _, err := client.Send(t.Context(), api.SendRequest{Target: "@global", Message: fmt.Sprintf("seed %d %s", i, strings.Repeat("z", 1000))}); err != nil {
			t.Fatal(err)
		}
	}
}

// damagePages overwrites three leaf pages of the messages table in the
// database file with random bytes, as a failing disk would, and returns
// the file's hash afterwards. The file must not be open for writing.
func damagePages(t *testing.T, path string) [32]byte {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	var pages []int
	err = sqlitex.ExecuteTransient(conn, "SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' ORDER BY pageno",
		&sqlitex.ExecOptions{ResultFunc: func(s *sqlite.Stmt) error {
			pages = append(pages, s.ColumnInt(0))
			return nil
		}})
	var pageSize int
	if err == nil {
		pageSize, err = sqlitex.ResultInt(conn.Prep("PRAGMA page_size"))
	}
	conn.Close()
	if err != nil || len(pages) < 8 {
		t.Fatalf("leaf pages of messages: %v, %v; want at least 8", pages, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(27, 4))
	garbage := make([]byte, pageSize)
	for i := 1; i <= 3; i++ {
		for j := range garbage {
			garbage[j] = byte(r.Uint32())
		}
		if _, err := f.WriteAt(garbage, int64(pages[i*len(pages)/4]-1)*int64(pageSize)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return hashFile(t, path)
}

// missingFrom lists the wants that s does not contain.
func missingFrom(s string, wants []string) []string {
	var out []string
	for _, w := range wants {
		if !strings.Contains(s, w) {
			out = append(out, w)
		}
	}
	return out
}

func hashFile(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// runBounded is c.run for a command that should end on its own but might
// not (a daemon that starts when it should refuse): after d it is sent
// SIGTERM and ended is false.
func (c *cli) runBounded(d time.Duration, args ...string) (r result, ended bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = c.env()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && ctx.Err() == nil {
		c.t.Fatalf("run %v: %v", args, err)
	}
	return result{cmd.ProcessState.ExitCode(), out.String(), errb.String()}, ctx.Err() == nil
}

// stopAndWait stops the daemon started by c.startDaemon and waits until
// its process has exited, so its file is closed (and its WAL folded in).
func stopAndWait(t *testing.T, c *cli, daemon *exec.Cmd) {
	t.Helper()
	c.ok("stop", "--all")
	if err := daemon.Wait(); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
}

// The acceptance test: a damaged file refuses to start, both `daemon` and
// a command that starts one say which file and what to do, the file is
// left untouched, and the backup taken before brings everything back.
func TestE2EDamagedDatabaseRefusedAtStart(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := c.startDaemon()
	seedChannel(t, c, 300)
	backup := filepath.Join(t.TempDir(), "before.db")
	c.ok("backup", backup)
	stopAndWait(t, c, daemon)

	db := filepath.Join(c.home, api.DBFile)
	damaged := damagePages(t, db)
	says := []string{"the database file " + db + " is damaged (quick_check: ", "agent-worker backup", "sqlite3 " + db + " .recover | sqlite3 "}
	r, ended := c.runBounded(time.Minute, "daemon")
	if !ended || r.code == 0 {
		t.Errorf("daemon on a damaged file: ended %v, exit %d; want it to refuse to start\n%s", ended, r.code, r.stderr)
	}
	if missing := missingFrom(r.stderr, says); len(missing) > 0 {
		t.Errorf("daemon on a damaged file: stderr %q does not say %q", r.stderr, missing)
	}
	// A command that starts the daemon shows the reason too, not just
	// "see the log".
	r = c.run("send", "@global", "lost?")
	if r.code == 0 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("send that starts a daemon on a damaged file: exit %d, stderr %q; want a one-line refusal", r.code, r.stderr)
	}
	if missing := missingFrom(r.stderr, says); len(missing) > 0 {
		t.Errorf("send that starts a daemon: stderr %q does not say %q", r.stderr, missing)
	}
	if hashFile(t, db) != damaged {
		t.Error("the refused starts changed the damaged file")
	}
	if d, err := api.ReadDaemonInfo(c.home); err == nil && api.ProcessAlive(d.PID) {
		t.Errorf("a daemon runs on the damaged file: %+v", d)
	}

	// Restore as backup --help says: the copy over the file, no -wal/-shm.
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{db + "-wal", db + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out := c.ok("peek", "@global", "-n", "1000")
	if n := strings.Count(out, "] seed "); n != 300 || !strings.Contains(out, "seed 299 ") {
		t.Errorf("after the restore, peek shows %d seeded messages; want all 300", n)
	}
}

// `backup` resolves a relative path against the CLI's directory, refuses
// to overwrite without --force, answers JSON with --json, and a daemon
// starts from its copy with the messages sent before.
func TestE2EBackupRestores(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	if r := c.run("backup", "--help"); r.code != 0 || !strings.Contains(r.stdout, "agent-worker backup <file>") || !strings.Contains(r.stdout, "To restore a backup") {
		t.Errorf("backup --help: exit %d, stdout %q", r.code, r.stdout)
	}
	daemon := c.startDaemon()
	seedChannel(t, c, 20)
	dir := t.TempDir()
	r := c.runIn(dir, "backup", "team.db")
	want := filepath.Join(dir, "team.db")
	if r.code != 0 || !strings.Contains(r.stdout, "backed up "+filepath.Join(c.home, api.DBFile)+" to "+want+": ") || !strings.Contains(r.stdout, "checked") {
		t.Fatalf("backup team.db in %s: exit %d, stdout %q, stderr %q", dir, r.code, r.stdout, r.stderr)
	}
	if r = c.runIn(dir, "backup", "team.db"); r.code != api.ExitConflict || !strings.Contains(r.stderr, want+" already exists") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("backup over an existing file: exit %d, stderr %q; want %d naming it and --force", r.code, r.stderr, api.ExitConflict)
	}
	c.ok("send", "@global", "after the first backup")
	r = c.runIn(dir, "backup", "team.db", "--force", "--json")
	var b contract.Backup
	if err := json.Unmarshal([]byte(r.stdout), &b); r.code != 0 || err != nil || b.Path != want || b.Bytes <= 0 || b.Database != filepath.Join(c.home, api.DBFile) {
		t.Fatalf("backup --force --json: exit %d, %q (%v)", r.code, r.stdout, err)
	}
	if r = c.run("backup", filepath.Join(dir, "no", "such", "dir.db")); r.code != api.ExitUsage || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("backup into a missing directory: exit %d, stderr %q", r.code, r.stderr)
	}
	stopAndWait(t, c, daemon)

	// A new home whose database is the backup.
	other := &cli{t: t, home: t.TempDir()}
	t.Cleanup(other.stopDaemon)
	copied, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other.home, api.DBFile), copied, 0o600); err != nil {
		t.Fatal(err)
	}
	out := other.ok("peek", "@global", "-n", "100")
	if n := strings.Count(out, "] seed "); n != 20 || !strings.Contains(out, "after the first backup") {
		t.Errorf("a daemon started from the backup shows:\n%s\nwant the 20 seeded messages and the one sent after the first backup", out)
	}
}

// Damage found while the daemon runs: the request that meets it answers
// 503 (exit 6) naming the file and what to do, and status keeps
// answering, with the store CORRUPT.
func TestE2EDamageWhileRunningShowsInStatus(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := c.startDaemon()
	seedChannel(t, c, 300)
	stopAndWait(t, c, daemon)
	// A fresh daemon has read none of the messages' pages yet.
	c.startDaemon()
	db := filepath.Join(c.home, api.DBFile)
	damagePages(t, db)

	r := c.run("peek", "@global", "-n", "1000")
	if r.code != api.ExitUnavailable || !strings.Contains(r.stderr, "the database file "+db+" is damaged") ||
		!strings.Contains(r.stderr, "agent-worker stop --all") || strings.Contains(r.stderr, "internal error") {
		t.Fatalf("peek over damaged pages: exit %d, stderr %q; want %d naming the damaged file and what to do", r.code, r.stderr, api.ExitUnavailable)
	}
	out := c.ok("status")
	if !strings.Contains(out, "store:     CORRUPT (") || !strings.Contains(out, "store: CORRUPT since ") || !strings.Contains(out, "agent-worker backup") {
		t.Errorf("status does not show the damaged store:\n%s", out)
	}
	var st struct {
		api.Health
	}
	if err := json.Unmarshal([]byte(c.ok("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Store.CorruptSince == nil || st.Store.Corrupt == "" || st.Status != "degraded" {
		t.Errorf("status --json: status %q, store %+v; want degraded, corrupt since", st.Status, st.Store)
	}
}

// On a cluster, backup exits 2 with the pg_dump command that backs the
// shared database up (no password in it), and writes nothing.
func TestE2EBackupOnClusterNamesPgDump(t *testing.T) {
	t.Parallel()
	ms, _ := startCluster(t, 1)
	dst := filepath.Join(t.TempDir(), "b.db")
	r := ms[0].run("backup", dst)
	if r.code != api.ExitUsage || !strings.Contains(r.stderr, `pg_dump "postgres://`) || !strings.Contains(r.stderr, "keeps its state in PostgreSQL") {
		t.Errorf("backup on a cluster: exit %d, stderr %q; want %d with the pg_dump command", r.code, r.stderr, api.ExitUsage)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("backup on a cluster wrote %s: %v", dst, err)
	}
}
