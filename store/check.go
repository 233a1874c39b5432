package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/contract"
)

// A damaged database is refused, not used: at open, SQLite's own check
// (PRAGMA quick_check, or the full integrity_check on request) must find
// the file sound before anything reads or writes it, and a damage found
// later (SQLITE_CORRUPT, SQLITE_NOTADB) makes the store unavailable with
// a message that says what to do, and a state status shows. Either way the
// file is left as it is for the user to restore or recover.

// ErrDamaged matches (errors.Is) the error Open returns for a database
// file that SQLite finds damaged.
var ErrDamaged = errors.New("the database file is damaged")

// damagedError is Open's refusal of a damaged file: which file, what
// SQLite found, and what to do about it, in one line (the CLI that
// started the daemon shows the last line of its log).
type damagedError struct {
	path   string
	detail string
}

func (e *damagedError) Error() string {
	return fmt.Sprintf("the database file %s is damaged (%s): the daemon will not use it. Leave it as it is and either %s",
		e.path, e.detail, restoreAdvice(e.path))
}

func (e *damagedError) Is(target error) bool { return target == ErrDamaged }

// restoreAdvice says how to get a sound file back: a backup, or what
// SQLite can still read. The -wal and -shm files must go with the damaged
// file, or SQLite would replay the old log into the restored one.
func restoreAdvice(path string) string {
	recovered := filepath.Join(filepath.Dir(path), "recovered.db")
	return fmt.Sprintf("restore a backup made by `agent-worker backup` (copy it over %[1]s and delete %[1]s-wal and %[1]s-shm if they exist), "+
		"or save what SQLite can still read: %[3]s (any sqlite3; where `.recover` works, %[4]s saves more), "+
		"then put %[2]s in its place the same way "+
		"(docs/troubleshooting.md, \"A damaged database file\", has the whole recipe)",
		path, recovered, DumpCommand(path, recovered), RecoverCommand(path, recovered))
}

// DumpCommand is the shell command that copies what the sqlite3 shell can
// still read of the damaged file path into a new file recovered. It works
// with every sqlite3, Debian 12's and macOS's included: .dump skips the
// damaged pages, and its closing ROLLBACK (written when it met damage) is
// made a COMMIT so that what it read is kept.
func DumpCommand(path, recovered string) string {
	return fmt.Sprintf("sqlite3 %s .dump | sed '$s/^ROLLBACK; -- due to errors$/COMMIT;/' | sqlite3 %s", path, recovered)
}

// RecoverCommand is the sqlite3 shell's .recover of path into recovered,
// which reads around damaged pages and saves more than DumpCommand, but
// needs a sqlite3 built with the dbpage table (Debian 12's fails with "SQL
// logic error").
func RecoverCommand(path, recovered string) string {
	return fmt.Sprintf("sqlite3 %s .recover | sqlite3 %s", path, recovered)
}

// checkSampleRows is how many of SQLite's findings an error quotes.
const checkSampleRows = 3

// checkSQLite runs quick_check (or integrity_check when full) on e's file
// and refuses a file it finds damaged. quick_check reads every page of
// every table and index once, without comparing indexes to their tables:
// about 80 ms for 100,000 messages (a 46 MB file). It runs on a connection
// of its own, closed afterwards, so that no pooled connection keeps the
// whole file in its cache (and would not see damage done to it later).
// The check is bounded by the file's size, not by a deadline, so that a
// big file is not refused for being big.
func (db *DB) checkSQLite(e *sqliteEngine, full bool) error {
	pragma := "quick_check"
	if full {
		pragma = "integrity_check"
	}
	start := time.Now()
	conn, err := sqlite.OpenConn(e.path, sqlite.OpenReadWrite|sqlite.OpenURI)
	if err != nil {
		return openFailed(e.path, err)
	}
	var rows []string
	err = sqlitex.ExecuteTransient(conn, "PRAGMA "+pragma+"(20)", &sqlitex.ExecOptions{ResultFunc: func(s *sqlite.Stmt) error {
		rows = append(rows, s.ColumnText(0))
		return nil
	}})
	conn.Close()
	took := time.Since(start)
	level := hclog.Debug
	if full || took > time.Second {
		level = hclog.Info // asked for, or long enough to explain a slow start
	}
	db.log.Log(level, "checked the database file", "check", pragma, "ms", took.Milliseconds(), "path", e.path)
	if err != nil && !corrupt(err) {
		return fmt.Errorf("open store %s: %s: %w", e.path, pragma, err)
	}
	if err == nil && len(rows) == 1 && rows[0] == "ok" {
		return nil
	}
	return &damagedError{path: e.path, detail: pragma + ": " + findings(rows, err)}
}

// findings sums up what a check reported in a few words: its first rows
// (SQLite's banner left out) and how many more there are.
func findings(rows []string, err error) string {
	var out []string
	for _, r := range rows {
		for _, l := range strings.Split(r, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "*** in database") {
				out = append(out, l)
			}
		}
	}
	if len(out) == 0 && err != nil {
		return sqliteMessage(err)
	}
	if len(out) > checkSampleRows {
		out = append(out[:checkSampleRows], fmt.Sprintf("and %d more", len(out)-checkSampleRows))
	}
	return strings.Join(out, "; ")
}

// sqliteMessage is SQLite's own words for err ("database disk image is
// malformed"), without the Go wrapping around them.
func sqliteMessage(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && sqlite.ErrCode(err) != sqlite.ResultError {
		return s[i+2:]
	}
	return s
}

// openFailed is Open's error for the SQLite file at path: a damaged file
// is refused as such, anything else names the file.
func openFailed(path string, err error) error {
	if corrupt(err) {
		detail := sqliteMessage(err)
		if sqlite.ErrCode(err).ToPrimary() == sqlite.ResultNotADB {
			detail = "its header is not an SQLite database's: " + detail
		}
		return &damagedError{path: path, detail: detail}
	}
	return fmt.Errorf("open store %s: %w", path, err)
}

// coded is classify for the store's own reads and writes: a damaged
// database also becomes unavailable, with the file named and what to do,
// and is remembered for Health from the first time it is seen.
func (db *DB) coded(err error) error {
	var ae *contract.Error
	if err == nil || errors.As(err, &ae) || !corrupt(err) {
		return classify(err)
	}
	now := db.now()
	db.health.mu.Lock()
	if db.health.corrupt == "" {
		db.health.corrupt, db.health.corruptAt = sqliteMessage(err), now
	}
	db.health.mu.Unlock()
	db.log.Error("the database is damaged", "path", db.path, "error", err)
	if _, pg := db.eng.(*postgresEngine); pg {
		return contract.Errorf(contract.CodeUnavailable, "the PostgreSQL database %s reports damaged data (%v): restore it from your PostgreSQL backups; "+
			"see PostgreSQL's documentation on data corruption", db.path, err)
	}
	return contract.Errorf(contract.CodeUnavailable, "the database file %s is damaged (%s): stop the daemon (agent-worker stop --all), then %s",
		db.path, sqliteMessage(err), restoreAdvice(db.path))
}
