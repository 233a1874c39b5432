package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
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
	fn      func(querier) error
	grouped bool // may share a commit with other grouped writes
	state   atomic.Int32
	done    chan error
}

const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

// writer runs every write, one transaction at a time, so that concurrent
// writes that allow it can share one commit. Each engine serializes writes
// anyway (SQLite admits one writer; on PostgreSQL every write transaction
// takes the same advisory lock), so queueing them here costs nothing and
// saves a commit per grouped write.
type writer struct {
	// commits counts transactions committed, to show writes sharing them.
	commits atomic.Int64
	reqs    chan *writeReq
	quit    chan struct{}
	done    chan struct{}
}

func newWriter() *writer {
	return &writer{reqs: make(chan *writeReq, maxGroup), quit: make(chan struct{}), done: make(chan struct{})}
}

// close stops the writer after the write it is running.
func (w *writer) close() error {
	close(w.quit)
	<-w.done
	return nil
}

// submit queues fn and waits for its outcome. ctx bounds only the wait in
// the queue: once the writer has taken fn, it commits or rolls back whole
// and the caller hears which.
func (db *DB) submit(ctx context.Context, fn func(querier) error, grouped bool) error {
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
	if err := db.eng.checkFile(); err != nil {
		err = db.noteWrite(err)
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	if len(batch) > 1 {
		err := db.eng.transaction(func(conn querier) error {
			for _, r := range batch {
				if err := r.fn(conn); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			db.w.commits.Add(1)
			db.committed()
			db.noteWrite(nil)
			for _, r := range batch {
				r.done <- nil
			}
			return
		}
	}
	for _, r := range batch {
		err := db.eng.transaction(r.fn)
		if err == nil {
			db.w.commits.Add(1)
			db.committed()
		}
		r.done <- db.noteWrite(db.coded(err))
	}
}
