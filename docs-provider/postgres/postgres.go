package postgresdocs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
)

var _ docprovider.Provider = (*Provider)(nil)

// opTimeout bounds how long one call waits for a connection, a row lock or
// the server, so that a stuck database surfaces as an error, not a hung
// agent.
const opTimeout = 30 * time.Second

// Schema is the PostgreSQL schema that holds the provider's table. The
// store's tables live in the same database (the daemon's --store), so the
// documents keep to a schema of their own and never touch the store's.
const Schema = "agent_worker_docs"

// lockKey is the transaction-scoped advisory lock under which a provider
// creates the schema, so that daemons starting together do not race on
// CREATE SCHEMA. Like the store's keys it spells its owner in ASCII
// ("aw-docs"), so that pg_locks tells who holds it.
const lockKey int64 = 0x61772d646f6373

// maxConns caps one provider's connections. Each daemon runs one provider
// process, and the store's pool shares the server's max_connections.
const maxConns = 4

// Content is BYTEA, not TEXT: a document is whatever bytes were written,
// and TEXT cannot hold a NUL. Paths sort in byte order (COLLATE "C")
// whatever the database's collation, as the conformance suite requires.
const createTable = `CREATE TABLE ` + Schema + `.documents (
	workflow   TEXT             NOT NULL,
	tag        TEXT             NOT NULL,
	path       TEXT COLLATE "C" NOT NULL,
	content    BYTEA            NOT NULL,
	updated_at TIMESTAMPTZ      NOT NULL,
	PRIMARY KEY (workflow, tag, path)
)`

// columns is the shape of the table createTable makes, as format_type
// names each column's type: an existing table of another shape is not ours.
var columns = map[string]string{
	"workflow": "text", "tag": "text", "path": "text", "content": "bytea", "updated_at": "timestamp with time zone",
}

// Provider keeps documents in a PostgreSQL database that several daemons
// may share. It is safe for concurrent use; share one for the life of the
// process and Close it at the end.
type Provider struct {
	pool  *pgxpool.Pool
	where string // host:port/database, for messages: never the password

	// initSem admits one schema check at a time; ready is set once one
	// has succeeded, and is never cleared.
	initSem chan struct{}
	ready   atomic.Bool
}

// New returns a provider on the database at url (a postgres:// URL or a
// key=value connection string) without connecting: the first call creates
// the schema if needed. A database that is down then answers
// sdk.ErrUnavailable and the next call tries again, so a plugin started
// while the server restarts recovers on its own. Only a malformed url
// fails here.
func New(url string) (*Provider, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil { // pgconn's message hides the password
		return nil, sdk.Errorf(sdk.ErrInvalid, "documents database URL: %v", err)
	}
	cfg.MaxConns = maxConns
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "agent-worker-docs"
	}
	where := cfg.ConnConfig.Host + ":" + strconv.Itoa(int(cfg.ConnConfig.Port)) + "/" + cfg.ConnConfig.Database
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, sdk.Errorf(sdk.ErrInvalid, "documents database %s: %v", where, err)
	}
	return &Provider{pool: pool, where: where, initSem: make(chan struct{}, 1)}, nil
}

// Open returns a provider on the database at url, connected and with its
// schema in place: errors come now rather than on the first call.
func Open(ctx context.Context, url string) (*Provider, error) {
	p, err := New(url)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := p.ensureSchema(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Close releases the connections. Calls must have finished.
func (p *Provider) Close() error {
	p.pool.Close()
	return nil
}

// ensureSchema creates the schema and the table unless a previous call
// did. It takes the advisory lock first, and creates only what is missing
// (CREATE … IF NOT EXISTS checks the privilege even when the object
// exists), so a role that may not create schemas works once an
// administrator has made them.
func (p *Provider) ensureSchema(ctx context.Context) error {
	if p.ready.Load() {
		return nil
	}
	select {
	case p.initSem <- struct{}{}:
		defer func() { <-p.initSem }()
	case <-ctx.Done():
		return classify(ctx.Err())
	}
	if p.ready.Load() {
		return nil
	}
	err := pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey); err != nil {
			return err
		}
		var schema, table bool
		if err := tx.QueryRow(ctx, `SELECT to_regnamespace($1) IS NOT NULL, to_regclass($2) IS NOT NULL`,
			Schema, Schema+".documents").Scan(&schema, &table); err != nil {
			return err
		}
		if !schema {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA "+Schema); err != nil {
				return err
			}
		}
		if !table {
			_, err := tx.Exec(ctx, createTable)
			return err
		}
		return checkTable(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("documents database %s: %w", p.where, classify(err))
	}
	p.ready.Store(true)
	return nil
}

// checkTable refuses a documents table that another program made, before
// anything is written to it.
func checkTable(ctx context.Context, tx pgx.Tx) error {
	rows, _ := tx.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`, Schema+".documents")
	got := map[string]string{}
	var name, typ string
	if _, err := pgx.ForEachRow(rows, []any{&name, &typ}, func() error { got[name] = typ; return nil }); err != nil {
		return err
	}
	if len(got) != len(columns) {
		return foreignTable()
	}
	for n, t := range columns {
		if got[n] != t {
			return foreignTable()
		}
	}
	return nil
}

func foreignTable() error {
	return sdk.Errorf(sdk.ErrInvalid, "table %s.documents exists but is not an agent-worker documents table: drop or rename it, it belongs to another program", Schema)
}

// Read returns the content of the document.
func (p *Provider) Read(ctx context.Context, r docprovider.Ref) (string, error) {
	if err := docprovider.ValidateRef(r); err != nil {
		return "", err
	}
	var content []byte
	err := p.read(ctx, func(ctx context.Context) error {
		return p.pool.QueryRow(ctx, `SELECT content FROM `+Schema+`.documents WHERE workflow = $1 AND tag = $2 AND path = $3`,
			r.Workflow, r.Tag, r.Path).Scan(&content)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", sdk.Errorf(sdk.ErrNotFound, "document %s does not exist", r.Path)
	}
	if err != nil {
		return "", err
	}
	return string(content), nil
}

// Write creates or replaces the document in one statement.
func (p *Provider) Write(ctx context.Context, r docprovider.Ref, content string) error {
	if err := check(r, content); err != nil {
		return err
	}
	return p.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO `+Schema+`.documents (workflow, tag, path, content, updated_at) VALUES ($1, $2, $3, $4, now())
			ON CONFLICT (workflow, tag, path) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at`,
			r.Workflow, r.Tag, r.Path, []byte(content))
		return err
	})
}

// Append concatenates inside the database, so concurrent appends from any
// number of callers, in any number of daemons, are each applied whole, in
// some order. The size limit is checked in the same statement, on the row
// it locks, so two appends that each fit cannot together pass the limit.
func (p *Provider) Append(ctx context.Context, r docprovider.Ref, content string) error {
	if err := check(r, content); err != nil {
		return err
	}
	return p.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var size int64
		err := tx.QueryRow(ctx, `INSERT INTO `+Schema+`.documents AS d (workflow, tag, path, content, updated_at) VALUES ($1, $2, $3, $4, now())
			ON CONFLICT (workflow, tag, path) DO UPDATE SET content = d.content || excluded.content, updated_at = excluded.updated_at
			WHERE octet_length(d.content) + octet_length(excluded.content) <= $5
			RETURNING octet_length(content)`,
			r.Workflow, r.Tag, r.Path, []byte(content), docprovider.MaxDocumentBytes).Scan(&size)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		// Refused by the WHERE. ON CONFLICT locked the row all the same,
		// so its size is still the one that was too large.
		if err := tx.QueryRow(ctx, `SELECT octet_length(content) FROM `+Schema+`.documents WHERE workflow = $1 AND tag = $2 AND path = $3`,
			r.Workflow, r.Tag, r.Path).Scan(&size); err != nil {
			return err
		}
		if err := docprovider.CheckSize(r.Path, size+int64(len(content))); err != nil {
			return err
		}
		return fmt.Errorf("append to %s was not applied", r.Path) // unreachable while the row is locked
	})
}

// Create inserts the document unless it exists.
func (p *Provider) Create(ctx context.Context, r docprovider.Ref, content string) error {
	if err := check(r, content); err != nil {
		return err
	}
	return p.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO `+Schema+`.documents (workflow, tag, path, content, updated_at) VALUES ($1, $2, $3, $4, now())
			ON CONFLICT (workflow, tag, path) DO NOTHING`,
			r.Workflow, r.Tag, r.Path, []byte(content))
		if err == nil && tag.RowsAffected() == 0 {
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
	var out []docprovider.Info
	err := p.read(ctx, func(ctx context.Context) error {
		rows, _ := p.pool.Query(ctx, `SELECT path, octet_length(content), updated_at FROM `+Schema+`.documents
			WHERE workflow = $1 AND tag = $2 ORDER BY path COLLATE "C"`, s.Workflow, s.Tag)
		var err error
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (docprovider.Info, error) {
			var in docprovider.Info
			err := row.Scan(&in.Path, &in.Size, &in.UpdatedAt)
			in.UpdatedAt = in.UpdatedAt.UTC()
			return in, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []docprovider.Info{}
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

// read runs fn with ctx capped at opTimeout.
func (p *Provider) read(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := p.ensureSchema(ctx); err != nil {
		return err
	}
	return classify(fn(ctx))
}

// write runs fn in one transaction. ctx bounds only the wait for a
// connection: once the transaction starts a cancelled caller no longer
// interrupts it, so a write either commits or rolls back whole and the
// caller never mistakes a commit for a failure.
func (p *Provider) write(ctx context.Context, fn func(context.Context, pgx.Tx) error) error {
	txCtx, cancelTx := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancelTx()
	waitCtx, cancelWait := context.WithTimeout(ctx, opTimeout)
	defer cancelWait()
	if err := p.ensureSchema(waitCtx); err != nil {
		return err
	}
	conn, err := p.pool.Acquire(waitCtx)
	if err != nil {
		return classify(err)
	}
	defer conn.Release()
	return classify(pgx.BeginTxFunc(txCtx, conn, pgx.TxOptions{}, func(tx pgx.Tx) error { return fn(txCtx, tx) }))
}

// classify marks errors the caller can retry (the server unreachable,
// restarting or overloaded, a deadlock, a timeout) as sdk.ErrUnavailable
// and leaves the rest (already classified, or internal) alone.
func classify(err error) error {
	if err == nil || sdk.Class(err) != nil || !retryable(err) {
		return err
	}
	return sdk.Errorf(sdk.ErrUnavailable, "documents database is unavailable, try again: %w", err)
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) { // the server answered: its code says whether to retry
		switch pgErr.Code {
		case "40001", "40P01", // serialization failure, deadlock
			"55P03",                   // lock not available
			"57014",                   // statement cancelled (our deadline)
			"57P01", "57P02", "57P03": // shutting down, crashed, starting up
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "53") // connection; out of resources
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) ||
		errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF)
}
