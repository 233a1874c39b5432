package store

import (
	"context"

	"zombiezen.com/go/sqlite"
)

// The store runs the same queries on two engines: the embedded SQLite file
// (the default) and PostgreSQL (cluster mode). Queries are written once,
// in the SQL both accept, with SQLite's ? and ?N placeholders; the
// PostgreSQL engine rewrites those to $N. The few statements that must
// differ pick their text with querier.dialect.
//
// A LIMIT's parameter is written `LIMIT ? + 0`, never `LIMIT ?`: SQLite's
// planner reads a bare LIMIT parameter's value, and a statement whose plan
// read a parameter is prepared again every time it is bound, so the
// connection's statement cache saves nothing (a channel read cost 39 µs
// instead of 10). TestLimitParametersAreNotBare keeps it so.

// dialect names an engine's SQL.
type dialect int

const (
	dialectSQLite dialect = iota
	dialectPostgres
)

// querier is one connection of either engine: inside a transaction for a
// write, a plain pooled connection (or a read snapshot) for a read.
type querier interface {
	// execute runs one statement, handing each result row to
	// opts.ResultFunc; opts may be nil.
	execute(query string, opts *execOptions) error
	// changes is the number of rows the last statement inserted, updated
	// or deleted.
	changes() int
	dialect() dialect
}

// execOptions are a statement's arguments and its row callback.
type execOptions struct {
	Args       []any
	ResultFunc func(row) error
}

// row is the current result row. *sqlite.Stmt satisfies it as is, so the
// SQLite engine hands rows over without copying them.
type row interface {
	ColumnInt64(col int) int64
	ColumnInt(col int) int
	ColumnText(col int) string
	ColumnFloat(col int) float64
	ColumnBool(col int) bool
	// ColumnType tells NULL (sqlite.TypeNull) from a value.
	ColumnType(col int) sqlite.ColumnType
}

// engine is what an engine provides beyond queries: connections for reads
// and snapshots, one write transaction at a time, and its own checks.
type engine interface {
	// read runs fn on a pooled connection; with snapshot, inside one
	// read-only transaction so that its queries agree with each other.
	read(ctx context.Context, snapshot bool, fn func(querier) error) error
	// transaction runs fn in one write transaction, committed when fn
	// returns nil. The writer loop is its only caller.
	transaction(fn func(querier) error) error
	// checkFile refuses writes when the storage is known to be gone.
	checkFile() error
	close() error
}

// pick returns the statement text for q's engine.
func pick(q querier, sqliteSQL, postgresSQL string) string {
	if q.dialect() == dialectPostgres {
		return postgresSQL
	}
	return sqliteSQL
}
