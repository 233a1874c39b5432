package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// opTimeout bounds how long one store call may wait for a connection or the
// write lock, so that a stuck database surfaces as an error, not a hang.
const opTimeout = 30 * time.Second

// Options tunes Open; the zero value is what the daemon uses.
type Options struct {
	// Logger receives one line per applied migration. Nil discards.
	Logger hclog.Logger
	// Now is the clock for every timestamp the store writes, so that tests
	// can pin it. Nil means time.Now.
	Now func() time.Time
	// PoolSize is the number of connections; below 1 means 8, plenty for
	// WAL readers plus the one writer SQLite allows.
	PoolSize int
	// Migrations replaces the embedded migrations/ directory, for tests of
	// the migration runner itself.
	Migrations fs.FS
	// Daemon is the id of this daemon process, recorded on every run and
	// plugin process it starts; on PostgreSQL, where several daemons share
	// the store, it also scopes what the daemon lists as its own.
	Daemon string
	// ObserveWrite, when set, hears how long each write took (waiting for
	// the write slot included): the daemon's metrics, without the store
	// knowing about them. It must return quickly.
	ObserveWrite func(time.Duration)
	// CheckIntegrity makes Open run SQLite's full PRAGMA integrity_check
	// (every index against its table) instead of the quick_check it
	// always runs: the daemon's --check-store. PostgreSQL checks its own
	// pages, so it is ignored there.
	CheckIntegrity bool

	// indexDelay replaces indexDelay, the background indexer's wait after
	// a write: a test of the search's own catch-up sets it beyond the test.
	indexDelay time.Duration
}

// DB is the daemon's handle on its store: the SQLite file, or a
// PostgreSQL database in cluster mode. It is safe for concurrent use;
// callers share one for the life of the process.
type DB struct {
	path string // the file, or the PostgreSQL URL without its password
	eng  engine
	log  hclog.Logger
	now  func() time.Time
	// daemon is Options.Daemon.
	daemon string
	// w queues every write for the engine's one write transaction at a
	// time; reads go straight to the engine's pool.
	w *writer
	// tokens remembers verified agent tokens (LookupToken).
	tokens genCache[string, Token] // by token hash
	// teams remembers Members, configGen counts the writes that change
	// them or an agent's definition (configChanged).
	teams     genCache[Scope, Members]
	configGen atomic.Uint64
	// configHeard: in a cluster, this member hears every other member's
	// change of agents and workflows (HearConfigChanges), so it may keep
	// teams too.
	configHeard atomic.Bool
	health      health
	// ix indexes messages for search in batches (SQLite only; nil on
	// PostgreSQL).
	ix      *indexer
	observe func(time.Duration) // Options.ObserveWrite, never nil

	closeOnce sync.Once
	closeErr  error
}

// Open opens the store at path and brings its schema up to date: a
// postgres:// or postgresql:// URL opens PostgreSQL, anything else is the
// SQLite file (created if needed). It refuses a database whose applied
// migrations differ from the ones this binary embeds, because running on a
// schema the code does not expect corrupts state quietly.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ObserveWrite == nil {
		opts.ObserveWrite = func(time.Duration) {}
	}
	db := &DB{log: opts.Logger, now: opts.Now, observe: opts.ObserveWrite, daemon: opts.Daemon}
	if IsPostgresURL(path) {
		if err := db.openPostgres(ctx, path, opts); err != nil {
			return nil, err
		}
		if opts.CheckIntegrity {
			db.log.Info("the integrity check is for a SQLite file; PostgreSQL checks its own pages (data checksums, amcheck)")
		}
	} else if err := db.openSQLite(ctx, path, opts); err != nil {
		return nil, err
	}
	db.w = newWriter()
	go db.runWriter()
	db.startIndexer(opts.indexDelay)
	return db, nil
}

func (db *DB) openSQLite(ctx context.Context, path string, opts Options) error {
	if opts.PoolSize < 1 {
		opts.PoolSize = 8 // plenty for WAL readers plus the one writer
	}
	migrations := opts.Migrations
	if migrations == nil {
		migrations = sqliteMigrations()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	e, err := openSQLite(abs, opts.PoolSize)
	if err != nil {
		return openFailed(abs, err)
	}
	db.path, db.eng = abs, e
	// A damaged file is refused before anything reads or writes it.
	if err := db.checkSQLite(e, opts.CheckIntegrity); err != nil {
		e.close()
		return err
	}
	if err := db.migrateSQLite(ctx, e, migrations); err != nil {
		e.close()
		return openFailed(abs, err)
	}
	if err := e.openWriter(); err != nil {
		e.close()
		return openFailed(abs, err)
	}
	return nil
}

// Close releases every connection. Callers must have finished all store
// calls; the daemon closes the store last. Later calls do nothing.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.stopIndexer()
		db.closeErr = errors.Join(db.w.close(), db.eng.close())
	})
	return db.closeErr
}

// Path returns the absolute path of the database file (or the PostgreSQL
// URL without its password), for status output and for tools that inspect
// it.
func (db *DB) Path() string { return db.path }

// nowMs is the timestamp format of every column: unix milliseconds.
func (db *DB) nowMs() int64 { return db.now().UnixMilli() }

// fromMs turns a stored timestamp back into a time in UTC.
func fromMs(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// read runs fn on a pooled connection; ctx (capped at opTimeout) bounds both
// the wait for a connection and the queries themselves.
func (db *DB) read(ctx context.Context, fn func(querier) error) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return db.coded(db.eng.read(ctx, false, fn))
}

// snapshot is read inside one read-only transaction, for reads of several
// statements that must agree with each other.
func (db *DB) snapshot(ctx context.Context, fn func(querier) error) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return db.coded(db.eng.read(ctx, true, fn))
}

// write runs fn in one immediate transaction of its own. ctx bounds only
// the wait for the writer: once the transaction starts, cancelling ctx no
// longer interrupts it, so a write either commits or rolls back whole. A
// write is refused while the database file is deleted or replaced, and
// storage failures come back as api.CodeUnavailable (see Health).
func (db *DB) write(ctx context.Context, fn func(querier) error) error {
	return db.submit(ctx, fn, false)
}

// writeGrouped is write for the hot path (channel messages): concurrent
// grouped writes may share one commit, and each caller still hears only
// after its own write is committed. fn may run twice (a write that shares
// a failed commit runs again alone), so it must only assign its results,
// never accumulate them.
func (db *DB) writeGrouped(ctx context.Context, fn func(querier) error) error {
	return db.submit(ctx, fn, true)
}

// Counts is a cheap summary of the database, for status pages and health
// checks.
type Counts struct {
	Agents, Workflows, Messages, Runs int
}

// Counts returns the number of rows in the main tables, read in one
// statement so the numbers are consistent with each other.
func (db *DB) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT
			(SELECT count(*) FROM agents), (SELECT count(*) FROM workflows),
			(SELECT count(*) FROM messages), (SELECT count(*) FROM runs)`,
			&execOptions{ResultFunc: func(s row) error {
				c = Counts{s.ColumnInt(0), s.ColumnInt(1), s.ColumnInt(2), s.ColumnInt(3)}
				return nil
			}})
	})
	return c, err
}
