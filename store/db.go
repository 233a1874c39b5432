package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
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
	// ObserveWrite, when set, hears how long each write took (waiting for
	// the write slot included): the daemon's metrics, without the store
	// knowing about them. It must return quickly.
	ObserveWrite func(time.Duration)
}

// DB is the daemon's handle on its database file. It is safe for
// concurrent use; callers share one for the life of the process.
type DB struct {
	path string
	pool *sqlitex.Pool
	log  hclog.Logger
	now  func() time.Time
	// w runs every write, on a connection of its own; the pool serves
	// readers.
	w *writer
	// tokens remembers verified agent tokens (LookupToken).
	tokens  tokenCache
	health  health
	observe func(time.Duration) // Options.ObserveWrite, never nil

	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating if needed) the database at path and brings its
// schema up to date. It refuses a database whose applied migrations differ
// from the ones this binary embeds, because running on a schema the code
// does not expect corrupts state quietly.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PoolSize < 1 {
		opts.PoolSize = 8
	}
	if opts.ObserveWrite == nil {
		opts.ObserveWrite = func(time.Duration) {}
	}
	migrations := opts.Migrations
	if migrations == nil {
		migrations = embeddedMigrations()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	// Create the file ourselves so it is private: it holds every message, and
	// SQLite gives its -wal and -shm files the mode of the database file.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	opened, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}

	pool, err := sqlitex.NewPool(abs, sqlitex.PoolOptions{
		PoolSize:    opts.PoolSize,
		PrepareConn: prepareConn,
	})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	db := &DB{path: abs, pool: pool, log: opts.Logger, now: opts.Now, health: health{opened: opened},
		observe: opts.ObserveWrite}
	if err := db.migrate(ctx, migrations); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if db.w, err = openWriter(abs); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	go db.runWriter()
	return db, nil
}

// prepareConn sets the per-connection PRAGMAs. They run one by one outside
// any transaction, where foreign_keys would silently do nothing.
func prepareConn(conn *sqlite.Conn) error {
	for _, p := range []string{"PRAGMA foreign_keys = ON;", "PRAGMA synchronous = NORMAL;"} {
		if err := sqlitex.ExecuteTransient(conn, p, nil); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// Close releases every connection. Callers must have finished all store
// calls; the daemon closes the store last. Later calls do nothing.
func (db *DB) Close() error {
	db.closeOnce.Do(func() { db.closeErr = errors.Join(db.w.close(), db.pool.Close()) })
	return db.closeErr
}

// Path returns the absolute path of the database file, for status output
// and for tools that inspect it.
func (db *DB) Path() string { return db.path }

// nowMs is the timestamp format of every column: unix milliseconds.
func (db *DB) nowMs() int64 { return db.now().UnixMilli() }

// fromMs turns a stored timestamp back into a time in UTC.
func fromMs(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// read runs fn on a pooled connection; ctx (capped at opTimeout) bounds both
// the wait for a connection and the queries themselves.
func (db *DB) read(ctx context.Context, fn func(*sqlite.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	conn, err := db.pool.Take(ctx)
	if err != nil {
		return err
	}
	defer db.pool.Put(conn)
	return classify(fn(conn))
}

// write runs fn in one immediate transaction of its own. ctx bounds only
// the wait for the writer: once the transaction starts, cancelling ctx no
// longer interrupts it, so a write either commits or rolls back whole. A
// write is refused while the database file is deleted or replaced, and
// storage failures come back as api.CodeUnavailable (see Health).
func (db *DB) write(ctx context.Context, fn func(*sqlite.Conn) error) error {
	return db.submit(ctx, fn, false)
}

// writeGrouped is write for the hot path (channel messages): concurrent
// grouped writes may share one commit, and each caller still hears only
// after its own write is committed. fn may run twice (a write that shares
// a failed commit runs again alone), so it must only assign its results,
// never accumulate them.
func (db *DB) writeGrouped(ctx context.Context, fn func(*sqlite.Conn) error) error {
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
	err := db.read(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT
			(SELECT count(*) FROM agents), (SELECT count(*) FROM workflows),
			(SELECT count(*) FROM messages), (SELECT count(*) FROM runs)`,
			&sqlitex.ExecOptions{ResultFunc: func(s *sqlite.Stmt) error {
				c = Counts{s.ColumnInt(0), s.ColumnInt(1), s.ColumnInt(2), s.ColumnInt(3)}
				return nil
			}})
	})
	return c, err
}
