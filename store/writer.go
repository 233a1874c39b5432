package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// maxGroup bounds how many queued writes share one commit, so that one
// transaction stays short even under a burst.
const maxGroup = 64

// errClosed answers writes that arrive after Close.
var errClosed = errors.New("store is closed")

// writeReq is one write waiting for the writer. state moves once from
// queued to taken (the writer runs it; the caller must wait for done) or to
// abandoned (the caller gave up before it was taken; the writer skips it).
type writeReq struct {
	fn      func(*sqlite.Conn) error
	grouped bool // may share a commit with other grouped writes
	state   atomic.Int32
	done    chan error
}

const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

// writer owns the one connection every write goes through. SQLite admits
// one writer at a time anyway; keeping the writes on one connection keeps
// its page cache valid from one transaction to the next (a pooled
// connection's cache is thrown away whenever another connection wrote),
// and lets concurrent writes that allow it share one commit.
type writer struct {
	// commits counts transactions committed, to show writes sharing them.
	commits atomic.Int64
	conn    *sqlite.Conn
	reqs    chan *writeReq
	quit    chan struct{}
	done    chan struct{}
}

func openWriter(path string) (*writer, error) {
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate|sqlite.OpenWAL|sqlite.OpenURI)
	if err != nil {
		return nil, err
	}
	conn.SetBlockOnBusy()
	if err := prepareConn(conn); err != nil {
		conn.Close()
		return nil, err
	}
	return &writer{conn: conn, reqs: make(chan *writeReq, maxGroup), quit: make(chan struct{}), done: make(chan struct{})}, nil
}

// close stops the writer after the write it is running and closes its
// connection.
func (w *writer) close() error {
	close(w.quit)
	<-w.done
	return w.conn.Close()
}

// submit queues fn and waits for its outcome. ctx bounds only the wait in
// the queue: once the writer has taken fn, it commits or rolls back whole
// and the caller hears which.
func (db *DB) submit(ctx context.Context, fn func(*sqlite.Conn) error, grouped bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer func(start time.Time) { db.observe(time.Since(start)) }(time.Now())
	r := &writeReq{fn: fn, grouped: grouped, done: make(chan error, 1)}
	waitCtx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	select {
	case db.w.reqs <- r:
	case <-db.w.quit:
		return errClosed
	case <-waitCtx.Done():
		return fmt.Errorf("wait for write: %w", waitCtx.Err())
	}
	select {
	case err := <-r.done:
		return err
	case <-waitCtx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return fmt.Errorf("wait for write: %w", waitCtx.Err())
		}
	case <-db.w.quit:
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return errClosed // the writer stopped before taking it
		}
	}
	return <-r.done // taken meanwhile: its outcome is coming
}

// runWriter is the writer's loop: it takes the next write and, when that write
// may be grouped, every grouped write already queued behind it (up to
// maxGroup), and commits them together.
func (db *DB) runWriter() {
	w := db.w
	defer close(w.done)
	batch := make([]*writeReq, 0, maxGroup)
	var held *writeReq // a write that may not be grouped, taken while gathering
	for {
		r := held // already taken
		held = nil
		if r == nil {
			select {
			case r = <-w.reqs:
			case <-w.quit:
				return
			}
			if !r.state.CompareAndSwap(reqQueued, reqTaken) {
				continue // its caller gave up
			}
		}
		batch = append(batch[:0], r)
	gather:
		for r.grouped && len(batch) < maxGroup {
			select {
			case next := <-w.reqs:
				if !next.state.CompareAndSwap(reqQueued, reqTaken) {
					continue
				}
				if !next.grouped {
					held = next
					break gather
				}
				batch = append(batch, next)
			default:
				break gather
			}
		}
		db.commit(batch)
	}
}

// commit runs batch in one immediate transaction and answers each write.
// If any write fails, the transaction rolls back and each write runs again
// alone, so that one bad write fails by itself and the others still land:
// grouped writes are ones that can simply be run again.
func (db *DB) commit(batch []*writeReq) {
	if err := db.checkFile(); err != nil {
		err = db.noteWrite(err)
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	if len(batch) > 1 {
		err := db.transaction(func(conn *sqlite.Conn) error {
			for _, r := range batch {
				if err := r.fn(conn); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			db.w.commits.Add(1)
			db.noteWrite(nil)
			for _, r := range batch {
				r.done <- nil
			}
			return
		}
	}
	for _, r := range batch {
		err := db.transaction(r.fn)
		if err == nil {
			db.w.commits.Add(1)
		}
		r.done <- db.noteWrite(classify(err))
	}
}

// transaction runs fn in one immediate transaction on the writer's
// connection, interrupted only if it outlasts opTimeout.
func (db *DB) transaction(fn func(*sqlite.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	db.w.conn.SetInterrupt(ctx.Done())
	defer db.w.conn.SetInterrupt(nil)
	return immediate(db.w.conn, fn)
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
