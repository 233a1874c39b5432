package store

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"zombiezen.com/go/sqlite"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/jackc/pgx/v5/pgconn"
)

// The store speaks the daemon's one error vocabulary, host/api's codes: a
// failure a caller can act on comes back as an *contract.Error (errors.As and
// errors.Is with contract.ErrNotFound and the like work through any wrapping),
// anything else is an internal failure. Queries build their own coded
// errors where they know the object (not found, already exists); classify
// turns what SQLite or PostgreSQL reports into codes, in one place.

// classify turns SQLite's failures into coded errors: a duplicate key is a
// conflict, a broken reference or rule an invalid request, a busy or
// locked database unavailable (retry). Storage failures (disk full, a
// deleted file) become unavailable in noteWrite, which also records them
// for Health. An error that already has a code passes through.
func classify(err error) error {
	var coded *contract.Error
	if err == nil || errors.As(err, &coded) {
		return err
	}
	if unreachable(err) {
		return contract.Errorf(contract.CodeUnavailable, "the store is unreachable (%w): retry when the database is back", err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505":
			return contract.Errorf(contract.CodeConflict, "%w", err)
		case strings.HasPrefix(pe.Code, "23"):
			return contract.Errorf(contract.CodeInvalid, "%w", err)
		case pe.Code == "40001", pe.Code == "40P01", pe.Code == "55P03":
			return contract.Errorf(contract.CodeUnavailable, "the database is busy (%w): retry", err)
		}
		return err
	}
	switch sqlite.ErrCode(err).ToPrimary() {
	case sqlite.ResultConstraint:
		if isConflict(err) {
			return contract.Errorf(contract.CodeConflict, "%w", err)
		}
		return contract.Errorf(contract.CodeInvalid, "%w", err)
	case sqlite.ResultBusy, sqlite.ResultLocked:
		return contract.Errorf(contract.CodeUnavailable, "the database is busy (%w): retry", err)
	}
	return err
}

// unreachable reports an error that says the database server cannot be
// reached or is going away: a failed connection, a dropped one,
// PostgreSQL's connection exceptions (SQLSTATE class 08) and its
// shutdowns (57P01 admin, 57P02 crash, 57P03 cannot connect now). What
// asked may retry once it is back; it is no fault of the request.
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE)
}

// corrupt reports an error that says the database's own pages are
// damaged: SQLite's SQLITE_CORRUPT and SQLITE_NOTADB (a header that is not
// a database's), PostgreSQL's data_corrupted and index_corrupted (XX001,
// XX002). No retry helps: the database has to be restored or recovered,
// so DB.coded makes it a health state of the store (Health.Corrupt).
func corrupt(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "XX001" || pe.Code == "XX002"
	}
	switch sqlite.ErrCode(err).ToPrimary() {
	case sqlite.ResultCorrupt, sqlite.ResultNotADB:
		return true
	}
	return false
}

// isConflict reports whether err is a duplicate-key failure, for the call
// sites that replace SQLite's wording with one that names the object.
func isConflict(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	c := sqlite.ErrCode(err)
	return c == sqlite.ResultConstraintPrimaryKey || c == sqlite.ResultConstraintUnique
}
