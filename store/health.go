package store

import (
	"context"
	"sync"
	"time"

	"zombiezen.com/go/sqlite"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Health is how the database file is doing, for status: whether it is
// still the file the daemon opened, and whether writes are succeeding.
type Health struct {
	Path string
	// Linked is false once the file was deleted or replaced under the
	// daemon; every write is then refused, since it would land in a file
	// nobody can open again.
	Linked bool
	// LastWriteAt is the last committed write.
	LastWriteAt time.Time
	// LastError is the last write that failed for a storage reason (disk
	// full, file-size limit, I/O error, a deleted file), and when.
	LastError   string
	LastErrorAt time.Time
	// Corrupt is the first read or write that found the database damaged
	// (SQLITE_CORRUPT, SQLITE_NOTADB), and CorruptSince when. It stays
	// set until the daemon stops: a damaged file does not mend, it has to
	// be restored from a backup or recovered.
	Corrupt      string
	CorruptSince time.Time
}

// Failing reports whether the last write attempt failed: the error is
// current, not one the store has recovered from.
func (h Health) Failing() bool { return h.LastError != "" && !h.LastErrorAt.Before(h.LastWriteAt) }

// health is the DB's record behind Health.
type health struct {
	// mu guards the fields that follow.
	mu    sync.Mutex
	okAt  time.Time
	err   string
	errAt time.Time
	// corrupt and corruptAt are Health.Corrupt and CorruptSince.
	corrupt   string
	corruptAt time.Time
}

// noteWrite records a write's outcome for Health and turns a storage
// failure into an unavailable error that says what to do. Errors about the
// request itself (a constraint, a cancelled context) pass through.
func (db *DB) noteWrite(err error) error {
	now := db.now()
	if err == nil {
		db.health.mu.Lock()
		db.health.okAt = now
		db.health.mu.Unlock()
		return nil
	}
	if contract.ErrorCode(err) != contract.CodeUnavailable {
		if !isStorageFailure(err) {
			return err
		}
		if ferr := db.eng.checkFile(); ferr != nil {
			err = ferr // the real cause, in words
		} else {
			err = contract.Errorf(contract.CodeUnavailable,
				"the database %s cannot be written (%v): free disk space, raise the file-size limit or fix the file, then retry", db.path, err)
		}
	}
	db.health.mu.Lock()
	db.health.err, db.health.errAt = err.Error(), now
	db.health.mu.Unlock()
	return err
}

// isStorageFailure reports whether err comes from the file or the disk
// rather than from the statement.
func isStorageFailure(err error) bool {
	if postgresFailure(err) {
		return true
	}
	switch sqlite.ErrCode(err).ToPrimary() {
	case sqlite.ResultFull, sqlite.ResultIOErr, sqlite.ResultReadOnly, sqlite.ResultCantOpen,
		sqlite.ResultCorrupt, sqlite.ResultNotADB, sqlite.ResultPerm:
		return true
	}
	return false
}

// Health reports the database file's state now (the link is checked
// afresh) and the outcome of recent writes.
func (db *DB) Health() Health {
	h := Health{Path: db.path, Linked: db.eng.checkFile() == nil}
	db.health.mu.Lock()
	h.LastWriteAt, h.LastError, h.LastErrorAt = db.health.okAt, db.health.err, db.health.errAt
	h.Corrupt, h.CorruptSince = db.health.corrupt, db.health.corruptAt
	db.health.mu.Unlock()
	return h
}

// Ping asks the store the cheapest question it can answer, for the
// daemon's readiness probe (GET /readyz): nil when the store answers.
func (db *DB) Ping(ctx context.Context) error {
	return db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT 1`, nil)
	})
}
