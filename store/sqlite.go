package store

import (
	"context"
	"errors"
	"fmt"
	"os"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/contract"
)

// sqliteEngine is the embedded engine: one database file in WAL mode, a
// pool of connections for readers and one connection of its own for the
// writer, which SQLite admits one at a time anyway. Keeping every write on
// one connection keeps its page cache valid from one transaction to the
// next (a pooled connection's cache is thrown away whenever another
// connection wrote).
type sqliteEngine struct {
	path   string
	pool   *sqlitex.Pool
	w      *sqlite.Conn
	opened os.FileInfo // the file as Open found it
}

// sqliteConn is a querier on one SQLite connection.
type sqliteConn struct{ c *sqlite.Conn }

func (q sqliteConn) execute(query string, o *execOptions) error {
	if o == nil {
		return sqlitex.Execute(q.c, query, nil)
	}
	opts := &sqlitex.ExecOptions{Args: o.Args}
	if f := o.ResultFunc; f != nil {
		opts.ResultFunc = func(s *sqlite.Stmt) error { return f(s) }
	}
	return sqlitex.Execute(q.c, query, opts)
}

func (q sqliteConn) changes() int     { return q.c.Changes() }
func (q sqliteConn) dialect() dialect { return dialectSQLite }

// openSQLite opens (creating it private if needed) the database file at abs.
func openSQLite(abs string, poolSize int) (*sqliteEngine, error) {
	// Create the file ourselves so it is private: it holds every message, and
	// SQLite gives its -wal and -shm files the mode of the database file.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	opened, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, err
	}
	pool, err := sqlitex.NewPool(abs, sqlitex.PoolOptions{PoolSize: poolSize, PrepareConn: prepareConn})
	if err != nil {
		return nil, err
	}
	return &sqliteEngine{path: abs, pool: pool, opened: opened}, nil
}

// openWriter opens the writer's connection; it comes after the
// migrations, which run on a pooled one.
func (e *sqliteEngine) openWriter() error {
	conn, err := sqlite.OpenConn(e.path, sqlite.OpenReadWrite|sqlite.OpenCreate|sqlite.OpenWAL|sqlite.OpenURI)
	if err != nil {
		return err
	}
	conn.SetBlockOnBusy()
	if err := prepareConn(conn); err != nil {
		conn.Close()
		return err
	}
	e.w = conn
	return nil
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

func (e *sqliteEngine) read(ctx context.Context, snapshot bool, fn func(querier) error) (err error) {
	conn, err := e.pool.Take(ctx)
	if err != nil {
		return err
	}
	defer e.pool.Put(conn)
	if snapshot {
		defer sqlitex.Transaction(conn)(&err)
	}
	return fn(sqliteConn{conn})
}

// transaction runs fn inside BEGIN IMMEDIATE on the writer's connection,
// so the write lock is taken up front and a read-then-write never fails on
// lock upgrade; it is interrupted only if it outlasts opTimeout.
func (e *sqliteEngine) transaction(fn func(querier) error) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	e.w.SetInterrupt(ctx.Done())
	defer e.w.SetInterrupt(nil)
	end, err := sqlitex.ImmediateTransaction(e.w)
	if err != nil {
		return err
	}
	defer end(&err)
	return fn(sqliteConn{e.w})
}

// checkFile refuses writes once the database file is no longer the one
// the daemon opened: SQLite would go on writing into the unlinked inode and
// every acknowledged write would be lost at the next start. A stat costs
// microseconds, so every write pays it.
func (e *sqliteEngine) checkFile() error {
	fi, err := os.Stat(e.path)
	if err == nil && os.SameFile(fi, e.opened) {
		return nil
	}
	return contract.Errorf(contract.CodeUnavailable,
		"the database file %s was deleted or replaced while the daemon was running; nothing more can be saved: restart the daemon (agent-worker stop --all)", e.path)
}

func (e *sqliteEngine) close() error {
	var err error
	if e.w != nil {
		err = e.w.Close()
	}
	return errors.Join(err, e.pool.Close())
}
