package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"zombiezen.com/go/sqlite"
)

// Advisory lock keys, held by transaction (writes) or by session (the
// migration run). Any two 64-bit numbers do; these spell "aw-write" and
// "aw-migr" in ASCII so that pg_locks tells who holds them.
const (
	pgWriteLock   int64 = 0x61772d7772697465
	pgMigrateLock int64 = 0x61772d6d696772
)

// IsPostgresURL reports whether a --store value names a PostgreSQL
// database rather than a SQLite file.
func IsPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// RedactURL hides the password of a store URL, for logs and status.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "postgres://…"
	}
	return u.Redacted()
}

// postgresEngine is the cluster engine: a pgx pool on one PostgreSQL
// database that several daemons share. Every write transaction first
// takes the same transaction-scoped advisory lock, so writes are applied
// one at a time across the whole cluster, exactly as SQLite applies them
// on one machine: the code's read-then-write steps stay atomic, and a
// message's seq (taken inside the lock) is also its commit order, so a
// reader that follows seq never skips a message committed late.
type postgresEngine struct {
	pool *pgxpool.Pool
}

func (db *DB) openPostgres(ctx context.Context, dsn string, opts Options) error {
	db.path = RedactURL(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("open store %s: %w", db.path, err)
	}
	if opts.PoolSize > 0 {
		cfg.MaxConns = int32(opts.PoolSize)
	} else {
		cfg.MaxConns = 8
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "agent-worker"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("open store %s: %w", db.path, err)
	}
	e := &postgresEngine{pool: pool}
	migrations := opts.Migrations
	if migrations == nil {
		migrations = postgresMigrations()
	}
	if err := db.migratePostgres(ctx, e, migrations); err != nil {
		pool.Close()
		return fmt.Errorf("open store %s: %w", db.path, err)
	}
	db.eng = e
	return nil
}

// pgExecer is what a pooled connection and a transaction both offer.
type pgExecer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// pgConn is a querier on one PostgreSQL connection or transaction.
type pgConn struct {
	ctx context.Context
	q   pgExecer
	n   int64
	row pgRow
}

func (c *pgConn) changes() int     { return int(c.n) }
func (c *pgConn) dialect() dialect { return dialectPostgres }

func (c *pgConn) execute(query string, o *execOptions) error {
	sql := pgPlaceholders(query)
	var args []any
	if o != nil {
		args = pgArgs(o.Args)
	}
	if o == nil || o.ResultFunc == nil {
		tag, err := c.q.Exec(c.ctx, sql, args...)
		if err != nil {
			return err
		}
		c.n = tag.RowsAffected()
		return nil
	}
	rows, err := c.q.Query(c.ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if c.row.vals, err = rows.Values(); err != nil {
			return err
		}
		if err := o.ResultFunc(&c.row); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	c.n = rows.CommandTag().RowsAffected()
	return nil
}

// pgArgs passes Go booleans as pgBool, which PostgreSQL takes both where
// it expects a boolean and in the integer columns (0/1) the schema keeps
// flags in, as SQLite does.
func pgArgs(args []any) []any {
	var out []any // a copy, made at the first bool, so the caller's slice stays as it was
	for i, a := range args {
		if b, ok := a.(bool); ok {
			if out == nil {
				out = append([]any(nil), args...)
			}
			out[i] = pgBool(b)
		}
	}
	if out == nil {
		return args
	}
	return out
}

// pgBool encodes as a boolean or as 0/1, whichever the parameter is.
type pgBool bool

func (b pgBool) BoolValue() (pgtype.Bool, error) { return pgtype.Bool{Bool: bool(b), Valid: true}, nil }
func (b pgBool) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: boolInt(bool(b)), Valid: true}, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// pgSQLCache remembers each query's PostgreSQL text; the store has a few
// hundred distinct statements.
var pgSQLCache sync.Map

// pgPlaceholders rewrites SQLite's ? and ?N placeholders into $N, leaving
// string literals alone. A bare ? takes the number after the largest used
// so far, as in SQLite.
func pgPlaceholders(query string) string {
	if s, ok := pgSQLCache.Load(query); ok {
		return s.(string)
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	last := 0
	inString := false
	for i := 0; i < len(query); i++ {
		ch := query[i]
		switch {
		case ch == '\'':
			inString = !inString
			b.WriteByte(ch)
		case ch == '?' && !inString:
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			n := last + 1
			if j > i+1 {
				n, _ = strconv.Atoi(query[i+1 : j])
			}
			last = max(last, n)
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			i = j - 1
		default:
			b.WriteByte(ch)
		}
	}
	s := b.String()
	pgSQLCache.Store(query, s)
	return s
}

// pgRow is the current row as pgx decoded it, read the way SQLite's
// columns read: loosely typed, NULL as the zero value.
type pgRow struct{ vals []any }

func (r *pgRow) ColumnInt(col int) int { return int(r.ColumnInt64(col)) }

func (r *pgRow) ColumnInt64(col int) int64 {
	switch v := r.vals[col].(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case int16:
		return int64(v)
	case bool:
		return boolInt(v)
	case float64:
		return int64(v)
	case float32:
		return int64(v)
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	case pgtype.Numeric:
		if i, err := v.Int64Value(); err == nil && i.Valid {
			return i.Int64
		}
		if f, err := v.Float64Value(); err == nil && f.Valid {
			return int64(f.Float64)
		}
	}
	return 0
}

func (r *pgRow) ColumnFloat(col int) float64 {
	switch v := r.vals[col].(type) {
	case float64:
		return v
	case float32:
		return float64(v)
	case pgtype.Numeric:
		if f, err := v.Float64Value(); err == nil && f.Valid {
			return f.Float64
		}
		return 0
	case string:
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	return float64(r.ColumnInt64(col))
}

func (r *pgRow) ColumnBool(col int) bool { return r.ColumnInt64(col) != 0 }

func (r *pgRow) ColumnText(col int) string {
	switch v := r.vals[col].(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case int64, int32, int16, bool, pgtype.Numeric:
		return strconv.FormatInt(r.ColumnInt64(col), 10)
	}
	return fmt.Sprint(r.vals[col])
}

func (r *pgRow) ColumnType(col int) sqlite.ColumnType {
	switch r.vals[col].(type) {
	case nil:
		return sqlite.TypeNull
	case int64, int32, int16, bool:
		return sqlite.TypeInteger
	case float64, float32, pgtype.Numeric:
		return sqlite.TypeFloat
	case []byte:
		return sqlite.TypeBlob
	}
	return sqlite.TypeText
}

func (e *postgresEngine) read(ctx context.Context, snapshot bool, fn func(querier) error) error {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if !snapshot {
		return fn(&pgConn{ctx: ctx, q: conn})
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if err := fn(&pgConn{ctx: ctx, q: tx}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// pgBeginWrite begins a write transaction and takes the write lock in one
// round trip: pgx sends a query without arguments as one simple-protocol
// message, which may hold two statements.
var pgBeginWrite = fmt.Sprintf("BEGIN; SELECT pg_advisory_xact_lock(%d)", pgWriteLock)

func (e *postgresEngine) transaction(fn func(querier) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	tx, err := e.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: pgBeginWrite})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if err := fn(&pgConn{ctx: ctx, q: tx}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// appendMessagePostgresSQL is appendMessage's writes on PostgreSQL in one
// statement, so one round trip: the message (its seq comes back), an inbox
// row for each recipient who is a member and not the sender ($12), and,
// when $14, the workflow's agent streak, which an agent's message ($13)
// lengthens and anything else ends (countAgentStreak).
const appendMessagePostgresSQL = `WITH m AS (
	INSERT INTO messages (id, workflow, tag, sender, content, kind, to_agent, recipients, resource_id, created_at, traceparent)
	VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), $8, NULLIF($9, ''), $10, NULLIF($11, '')) RETURNING seq
), r AS (
	INSERT INTO message_recipients (workflow, tag, agent, seq)
	SELECT a.workflow, a.tag, a.name, m.seq FROM agents AS a, m
	WHERE a.workflow = $2 AND a.tag = $3 AND a.name = ANY($12::text[]) AND a.name <> $4
), s AS (
	UPDATE workflows SET agent_streak = CASE WHEN $13 AND EXISTS
		(SELECT 1 FROM agents WHERE workflow = $2 AND tag = $3 AND name = $4) THEN agent_streak + 1 ELSE 0 END
	WHERE name = $2 AND tag = $3 AND $14
	RETURNING agent_streak, loop_guard, state
)
SELECT m.seq, s.agent_streak, s.loop_guard, s.state FROM m LEFT JOIN s ON true`

// appendMessagePostgres finishes appendMessage on PostgreSQL: args are the
// message's columns, streak whether it counts in the agent streak.
func appendMessagePostgres(conn *pgConn, out Message, args []any, streak bool, now int64) (Message, error) {
	var n, guard int
	var state string
	args = append(args, out.Recipients, out.Kind == KindMessage, streak)
	err := conn.execute(appendMessagePostgresSQL, &execOptions{Args: args, ResultFunc: func(s row) error {
		out.Seq, n, guard, state = s.ColumnInt64(0), s.ColumnInt(1), s.ColumnInt(2), s.ColumnText(3)
		return nil
	}})
	if err != nil {
		return Message{}, err
	}
	if streak {
		if out.LoopGuardTripped, err = loopGuard(conn, out, n, guard, state, now); err != nil {
			return Message{}, err
		}
	}
	return out, nil
}

// checkFile has nothing to check: PostgreSQL reports a lost database as
// an error of the write itself.
func (e *postgresEngine) checkFile() error { return nil }

func (e *postgresEngine) close() error {
	e.pool.Close()
	return nil
}

// migratePostgres is migrateSQLite for PostgreSQL: under a session-level
// advisory lock, so that daemons starting together apply each migration
// once, each pending migration runs in one transaction with its
// migration_history row.
func (db *DB) migratePostgres(ctx context.Context, e *postgresEngine, fsys fs.FS) (err error) {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", pgMigrateLock); err != nil {
		return fmt.Errorf("wait for the migration lock: %w", err)
	}
	defer func() {
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", pgMigrateLock); uerr != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) // never hand back a connection that holds the lock
		}
	}()
	_, err = conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS migration_history (
		name       TEXT PRIMARY KEY,
		sha256     TEXT NOT NULL,
		applied_at BIGINT NOT NULL,
		ms         BIGINT NOT NULL
	)`)
	if err != nil {
		return fmt.Errorf("create migration_history: %w", err)
	}
	applied := map[string]string{}
	rows, err := conn.Query(ctx, `SELECT name, sha256 FROM migration_history`)
	if err != nil {
		return fmt.Errorf("read migration_history: %w", err)
	}
	for rows.Next() {
		var name, sum string
		if err := rows.Scan(&name, &sum); err != nil {
			rows.Close()
			return fmt.Errorf("read migration_history: %w", err)
		}
		applied[name] = sum
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read migration_history: %w", err)
	}
	pending, err := pendingMigrations(ms, applied)
	if err != nil {
		return err
	}
	for _, m := range pending {
		start := time.Now()
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Conn().PgConn().Exec(ctx, m.sql).ReadAll(); err != nil {
				return pgScriptError(m.sql, err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO migration_history (name, sha256, applied_at, ms) VALUES ($1, $2, $3, $4)`,
				m.name, m.sum, db.nowMs(), time.Since(start).Milliseconds())
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		db.log.Info("applied migration", "name", m.name, "ms", time.Since(start).Milliseconds())
	}
	return nil
}

// pgScriptError names the line of a migration that PostgreSQL refused.
func pgScriptError(script string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Position > 0 && int(pe.Position) <= len([]rune(script)) {
		before := string([]rune(script)[:pe.Position-1])
		return fmt.Errorf("line %d: %w", 1+strings.Count(before, "\n"), err)
	}
	return err
}

// postgresFailure reports whether err says the database cannot be used
// (a lost connection, a server shutting down, no space or resources)
// rather than that the statement was wrong.
func postgresFailure(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:2] {
		case "08", "53", "57", "58", "XX":
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || pgconn.Timeout(err) || pgconn.SafeToRetry(err)
}

// PostgresPool is the store's connection pool on PostgreSQL (nil on the
// SQLite file), for what shares the database with the store: the job
// queue and the cluster's notifications.
func (db *DB) PostgresPool() *pgxpool.Pool {
	if e, ok := db.eng.(*postgresEngine); ok {
		return e.pool
	}
	return nil
}
