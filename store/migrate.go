package store

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Each engine has its own migrations, each checked by its sha256: SQLite's
// in migrations/, PostgreSQL's in migrations/postgres/.
var (
	//go:embed migrations/*.sql
	sqliteMigrationFiles embed.FS
	//go:embed migrations/postgres/*.sql
	postgresMigrationFiles embed.FS
)

// sqliteMigrations is the SQLite schema this binary was built with.
func sqliteMigrations() fs.FS { return subFS(sqliteMigrationFiles, "migrations") }

// postgresMigrations is the PostgreSQL schema this binary was built with.
func postgresMigrations() fs.FS { return subFS(postgresMigrationFiles, "migrations/postgres") }

func subFS(fsys embed.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}

// migrationName is enforced so that name order is apply order and a file
// dropped in by mistake is an error, not a silent skip.
var migrationName = regexp.MustCompile(`^\d{4}_[a-z0-9_]+\.sql$`)

type migration struct {
	name, sql, sum string
}

// loadMigrations reads every file of fsys in name order.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries { // ReadDir sorts by name
		if !migrationName.MatchString(e.Name()) || !e.Type().IsRegular() {
			return nil, fmt.Errorf("migration file %q: name must look like 0001_name.sql (4 digits, lower-case letters, digits, _)", e.Name())
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		sum := sha256.Sum256(b)
		ms = append(ms, migration{name: e.Name(), sql: string(b), sum: hex.EncodeToString(sum[:])})
	}
	return ms, nil
}

// migrateSQLite verifies the applied migrations against fsys and applies
// the missing ones, each in its own immediate transaction together with
// its migration_history row, so a failure leaves the previous schema
// intact.
func (db *DB) migrateSQLite(ctx context.Context, e *sqliteEngine, fsys fs.FS) (err error) {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	// Generous, since a migration may rewrite big tables, but bounded so that
	// a database held by another process fails start-up instead of hanging it.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	conn, err := e.pool.Take(ctx)
	if err != nil {
		return err
	}
	defer e.pool.Put(conn)

	err = sqlitex.ExecuteTransient(conn, `CREATE TABLE IF NOT EXISTS migration_history (
		name       TEXT PRIMARY KEY,
		sha256     TEXT NOT NULL,
		applied_at INTEGER NOT NULL,
		ms         INTEGER NOT NULL
	)`, nil)
	if err != nil {
		return fmt.Errorf("create migration_history: %w", err)
	}
	applied := map[string]string{}
	err = sqlitex.ExecuteTransient(conn, `SELECT name, sha256 FROM migration_history ORDER BY name`,
		&sqlitex.ExecOptions{ResultFunc: func(s *sqlite.Stmt) error {
			applied[s.ColumnText(0)] = s.ColumnText(1)
			return nil
		}})
	if err != nil {
		return fmt.Errorf("read migration_history: %w", err)
	}
	pending, err := pendingMigrations(ms, applied)
	if err != nil || len(pending) == 0 {
		return err
	}

	// Foreign keys go off while the schema changes, as SQLite's procedure for
	// table rebuilds requires; each migration is then checked for violations.
	if err := sqlitex.ExecuteTransient(conn, "PRAGMA foreign_keys = OFF;", nil); err != nil {
		return err
	}
	defer func() {
		if on := sqlitex.ExecuteTransient(conn, "PRAGMA foreign_keys = ON;", nil); err == nil {
			err = on // a pooled connection must never be left without them
		}
	}()
	for _, m := range pending {
		if err := db.apply(conn, m); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}

// pendingMigrations checks the recorded history against the known files
// and returns the files still to apply.
func pendingMigrations(ms []migration, applied map[string]string) ([]migration, error) {
	known := map[string]migration{}
	for _, m := range ms {
		known[m.name] = m
	}
	last := ""
	for _, name := range slices.Sorted(maps.Keys(applied)) { // the same report every time
		sum := applied[name]
		m, ok := known[name]
		if !ok {
			return nil, fmt.Errorf("database has migration %s that this binary does not know; it was written by a newer agent-worker", name)
		}
		if sum != m.sum {
			return nil, fmt.Errorf("migration %s was changed after it was applied (recorded sha256 %s, embedded %s); restore the original file or use a fresh database",
				name, short(sum), short(m.sum))
		}
		last = max(last, name)
	}
	var pending []migration
	for _, m := range ms {
		if _, ok := applied[m.name]; ok {
			continue
		}
		if m.name < last {
			return nil, fmt.Errorf("migration %s is new but sorts before %s, which is already applied; give it a higher number", m.name, last)
		}
		pending = append(pending, m)
	}
	return pending, nil
}

// apply runs one migration and records it in the same transaction.
func (db *DB) apply(conn *sqlite.Conn, m migration) error {
	start := time.Now()
	ms := int64(-1) // stays -1 if another process applied it first
	err := immediate(conn, func(conn *sqlite.Conn) error {
		// Another process may have applied it since we looked.
		n, err := count(sqliteConn{conn}, `SELECT count(*) FROM migration_history WHERE name = ?`, m.name)
		if err != nil || n > 0 {
			return err
		}
		if err := execScript(conn, m.sql); err != nil {
			return err
		}
		err = sqlitex.ExecuteTransient(conn, "PRAGMA foreign_key_check;", &sqlitex.ExecOptions{
			ResultFunc: func(s *sqlite.Stmt) error {
				return fmt.Errorf("breaks a foreign key: rows of %s reference missing rows of %s", s.ColumnText(0), s.ColumnText(2))
			}})
		if err != nil {
			return err
		}
		ms = time.Since(start).Milliseconds()
		return sqlitex.Execute(conn, `INSERT INTO migration_history (name, sha256, applied_at, ms) VALUES (?, ?, ?, ?)`,
			&sqlitex.ExecOptions{Args: []any{m.name, m.sum, db.nowMs(), ms}})
	})
	if err == nil && ms >= 0 {
		db.log.Info("applied migration", "name", m.name, "ms", ms)
	}
	return err
}

// immediate runs fn inside BEGIN IMMEDIATE, so the write lock is taken up
// front and a read-then-write never fails on lock upgrade.
func immediate(conn *sqlite.Conn, fn func(*sqlite.Conn) error) (err error) {
	end, err := sqlitex.ImmediateTransaction(conn)
	if err != nil {
		return err
	}
	defer end(&err)
	return fn(conn)
}

// count runs a query that returns one integer.
func count(conn querier, query string, args ...any) (int, error) {
	n := 0
	err := conn.execute(query, &execOptions{Args: args, ResultFunc: func(s row) error {
		n = s.ColumnInt(0)
		return nil
	}})
	return n, err
}

// execScript runs every statement of a migration, naming the line of the
// one that fails. Unlike sqlitex.ExecuteScript it accepts a trailing
// comment, which SQLite prepares to a statement that cannot be stepped.
func execScript(conn *sqlite.Conn, script string) error {
	for rest := script; !onlyComments(rest); {
		rest = strings.TrimLeft(rest, " \t\r\n")
		line := 1 + strings.Count(script[:len(script)-len(rest)], "\n")
		stmt, trailing, err := conn.PrepareTransient(rest)
		if err != nil {
			return fmt.Errorf("statement at line %d: %w", line, err)
		}
		for more := true; more && err == nil; {
			more, err = stmt.Step()
		}
		stmt.Finalize()
		if err != nil {
			return fmt.Errorf("statement at line %d: %w", line, err)
		}
		rest = rest[len(rest)-trailing:]
	}
	return nil
}

// onlyComments reports whether s holds no statement: nothing but blanks,
// semicolons and comments (SQLite lets a /* comment run to the end).
func onlyComments(s string) bool {
	for {
		s = strings.TrimLeft(s, " \t\r\n;")
		var end int
		switch {
		case s == "":
			return true
		case strings.HasPrefix(s, "--"):
			end = strings.IndexByte(s, '\n')
		case strings.HasPrefix(s, "/*"):
			if end = strings.Index(s[2:], "*/"); end >= 0 {
				end += 3
			}
		default:
			return false
		}
		if end < 0 {
			return true
		}
		s = s[end+1:]
	}
}

// short abbreviates a sha256 for error messages; the prefix is enough to
// tell two files apart.
func short(sum string) string {
	if len(sum) <= 12 {
		return sum
	}
	return sum[:12] + "…"
}
