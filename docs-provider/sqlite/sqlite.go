package sqlitedocs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
)

var _ docprovider.Provider = (*Provider)(nil)

// opTimeout bounds how long one call waits for a connection or the write
// lock, so that a stuck database surfaces as an error, not a hung agent.
const opTimeout = 30 * time.Second

// applicationID marks a database file as ours ("awdc" in the SQLite header),
// so that Open can refuse the daemon's database or any other file.
const applicationID = 0x61776463

const schema = `CREATE TABLE IF NOT EXISTS documents (
	workflow   TEXT    NOT NULL,
	tag        TEXT    NOT NULL,
	path       TEXT    NOT NULL,
	content    TEXT    NOT NULL,
	updated_at INTEGER NOT NULL, -- unix milliseconds
	PRIMARY KEY (workflow, tag, path)
) STRICT;`

// Provider keeps documents in one SQLite file. It is safe for concurrent
// use; share one for the life of the process and Close it at the end.
type Provider struct {
	pool *sqlitex.Pool
	// writeSem admits one of this process's writers at a time: SQLite allows
	// only one anyway, and queueing here leaves connections to readers.
	writeSem chan struct{}
}

// Open opens (creating if needed) the documents database at path, which
// must be a file of its own: never the daemon's agent-worker.db.
func Open(path string) (*Provider, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open documents database: %w", err)
	}
	pool, err := sqlitex.NewPool(path, sqlitex.PoolOptions{PoolSize: 4, PrepareConn: prepareConn})
	if err != nil {
		return nil, fmt.Errorf("open documents database %s: %w", path, err)
	}
	p := &Provider{pool: pool, writeSem: make(chan struct{}, 1)}
	if err := p.write(context.Background(), initSchema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open documents database %s: %w", path, err)
	}
	return p, nil
}

// prepareConn runs PRAGMAs one by one, outside any transaction, where they
// take effect. Open's default flags already put the file in WAL mode.
func prepareConn(conn *sqlite.Conn) error {
	return sqlitex.ExecuteTransient(conn, "PRAGMA synchronous = NORMAL;", nil)
}

// initSchema claims a new file and creates the table, or checks that an
// existing file is ours.
func initSchema(conn *sqlite.Conn) error {
	id, err := sqlitex.ResultInt(conn.Prep("PRAGMA application_id;"))
	if err != nil {
		return err
	}
	tables, err := sqlitex.ResultInt(conn.Prep("SELECT count(*) FROM sqlite_schema;"))
	if err != nil {
		return err
	}
	switch {
	case id == applicationID:
	case id == 0 && tables == 0:
		if err := sqlitex.ExecuteTransient(conn, fmt.Sprintf("PRAGMA application_id = %d;", applicationID), nil); err != nil {
			return err
		}
	default:
		return sdk.Errorf(sdk.ErrInvalid, "not an agent-worker documents database (is it the daemon's?); give the sqlite docs provider a file of its own")
	}
	return sqlitex.ExecuteTransient(conn, schema, nil)
}

// Close releases the database. Calls must have finished.
func (p *Provider) Close() error { return p.pool.Close() }

// Read returns the content of the document.
func (p *Provider) Read(ctx context.Context, r docprovider.Ref) (string, error) {
	if err := docprovider.ValidateRef(r); err != nil {
		return "", err
	}
	var content string
	found := false
	err := p.read(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT content FROM documents WHERE workflow = ? AND tag = ? AND path = ?;`,
			&sqlitex.ExecOptions{Args: []any{r.Workflow, r.Tag, r.Path}, ResultFunc: func(s *sqlite.Stmt) error {
				content, found = s.ColumnText(0), true
				return nil
			}})
	})
	if err == nil && !found {
		err = sdk.Errorf(sdk.ErrNotFound, "document %s does not exist", r.Path)
	}
	return content, err
}

// Write creates or replaces the document in one statement.
func (p *Provider) Write(ctx context.Context, r docprovider.Ref, content string) error {
	if err := check(r, content); err != nil {
		return err
	}
	return p.write(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `INSERT INTO documents (workflow, tag, path, content, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (workflow, tag, path) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at;`,
			&sqlitex.ExecOptions{Args: []any{r.Workflow, r.Tag, r.Path, content, time.Now().UnixMilli()}})
	})
}

// Append concatenates inside the database, so concurrent appends from any
// number of callers are each applied whole, in some order.
func (p *Provider) Append(ctx context.Context, r docprovider.Ref, content string) error {
	if err := check(r, content); err != nil {
		return err
	}
	return p.write(ctx, func(conn *sqlite.Conn) error {
		var size int64
		err := sqlitex.Execute(conn, `SELECT octet_length(content) FROM documents WHERE workflow = ? AND tag = ? AND path = ?;`,
			&sqlitex.ExecOptions{Args: []any{r.Workflow, r.Tag, r.Path}, ResultFunc: func(s *sqlite.Stmt) error {
				size = s.ColumnInt64(0)
				return nil
			}})
		if err != nil {
			return err
		}
		if err := docprovider.CheckSize(r.Path, size+int64(len(content))); err != nil {
			return err
		}
		return sqlitex.Execute(conn, `INSERT INTO documents (workflow, tag, path, content, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (workflow, tag, path) DO UPDATE SET content = content || excluded.content, updated_at = excluded.updated_at;`,
			&sqlitex.ExecOptions{Args: []any{r.Workflow, r.Tag, r.Path, content, time.Now().UnixMilli()}})
	})
}

// Create inserts the document unless it exists.
func (p *Provider) Create(ctx context.Context, r docprovider.Ref, content string) error {
	if err := check(r, content); err != nil {
		return err
	}
	return p.write(ctx, func(conn *sqlite.Conn) error {
		err := sqlitex.Execute(conn, `INSERT INTO documents (workflow, tag, path, content, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (workflow, tag, path) DO NOTHING;`,
			&sqlitex.ExecOptions{Args: []any{r.Workflow, r.Tag, r.Path, content, time.Now().UnixMilli()}})
		if err == nil && conn.Changes() == 0 {
			err = sdk.Errorf(sdk.ErrConflict, "document %s already exists", r.Path)
		}
		return err
	})
}

// List returns every document of the scope, sorted by path in byte order.
func (p *Provider) List(ctx context.Context, s docprovider.Scope) ([]docprovider.Info, error) {
	if err := docprovider.ValidateScope(s); err != nil {
		return nil, err
	}
	out := []docprovider.Info{}
	err := p.read(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT path, octet_length(content), updated_at FROM documents
			WHERE workflow = ? AND tag = ? ORDER BY path;`,
			&sqlitex.ExecOptions{Args: []any{s.Workflow, s.Tag}, ResultFunc: func(st *sqlite.Stmt) error {
				out = append(out, docprovider.Info{Path: st.ColumnText(0), Size: st.ColumnInt64(1), UpdatedAt: time.UnixMilli(st.ColumnInt64(2)).UTC()})
				return nil
			}})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// check validates a write before it reaches the database.
func check(r docprovider.Ref, content string) error {
	if err := docprovider.ValidateRef(r); err != nil {
		return err
	}
	return docprovider.CheckSize(r.Path, int64(len(content)))
}

// read runs fn on a pooled connection; ctx (capped at opTimeout) bounds the
// wait and the queries.
func (p *Provider) read(ctx context.Context, fn func(*sqlite.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	conn, err := p.pool.Take(ctx)
	if err != nil {
		return classify(err)
	}
	defer p.pool.Put(conn)
	return classify(fn(conn))
}

// write runs fn in one immediate transaction. ctx bounds only the wait: once
// the transaction starts a cancelled caller no longer interrupts it, so a
// write either commits or rolls back whole.
func (p *Provider) write(ctx context.Context, fn func(*sqlite.Conn) error) (err error) {
	// Created before Put is deferred, so that Put detaches it first.
	txCtx, cancelTx := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancelTx()
	waitCtx, cancelWait := context.WithTimeout(ctx, opTimeout)
	defer cancelWait()
	select {
	case p.writeSem <- struct{}{}:
		defer func() { <-p.writeSem }()
	case <-waitCtx.Done():
		return classify(waitCtx.Err())
	}
	conn, err := p.pool.Take(waitCtx)
	if err != nil {
		return classify(err)
	}
	defer p.pool.Put(conn)
	conn.SetInterrupt(txCtx.Done())
	end, err := sqlitex.ImmediateTransaction(conn)
	if err != nil {
		return classify(err)
	}
	defer func() { err = classify(err) }()
	defer end(&err)
	return fn(conn)
}

// classify marks errors the caller can retry as sdk.ErrUnavailable and
// leaves the rest (already classified, or internal) alone.
func classify(err error) error {
	if err == nil || sdk.Class(err) != nil {
		return err
	}
	switch sqlite.ErrCode(err).ToPrimary() {
	case sqlite.ResultBusy, sqlite.ResultLocked, sqlite.ResultInterrupt:
		return sdk.Errorf(sdk.ErrUnavailable, "documents database is busy, try again: %w", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return sdk.Errorf(sdk.ErrUnavailable, "documents database is busy, try again: %w", err)
	}
	return err
}
