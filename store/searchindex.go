package store

import (
	"context"
	"strconv"
	"time"
)

// On SQLite, messages reach the search index a batch at a time
// (migration 0024): the indexer adds every message after the mark in
// messages_fts_done to messages_fts and moves the mark, in one
// transaction. It runs a moment after writes (indexDelay, so that a burst
// of sends shares one batch) and before every search of messages, so a
// search finds every message committed before it began. PostgreSQL keeps
// each message's vector in its row (a generated column) and needs none of
// this.

// indexDelay is how long the indexer lets writes gather before it indexes
// them: long enough that a busy channel's messages share a batch (an FTS5
// commit costs about seven WAL pages whatever it holds), short enough that
// a search rarely finds more than a few hundred messages left to index.
const indexDelay = 100 * time.Millisecond

// indexer is the background half of message indexing.
type indexer struct {
	delay time.Duration // indexDelay, unless a test's Options say otherwise
	poke  chan struct{} // a write committed; buffered, one pending poke
	quit  chan struct{}
	done  chan struct{}
}

// startIndexer starts indexing messages in the background, on SQLite,
// delay after writes (0: indexDelay).
func (db *DB) startIndexer(delay time.Duration) {
	if _, ok := db.eng.(*sqliteEngine); !ok || benchNoMessageIndex {
		return
	}
	// A store opened with other migrations (tests of the migrator) has no
	// mark to index from.
	var n int
	err := db.read(context.Background(), func(conn querier) (err error) {
		n, err = count(conn, `SELECT count(*) FROM sqlite_schema WHERE name = 'messages_fts_done'`)
		return err
	})
	if err != nil || n == 0 {
		return
	}
	if delay <= 0 {
		delay = indexDelay
	}
	ix := &indexer{delay: delay, poke: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	db.ix = ix
	ix.poke <- struct{}{} // what the last run left unindexed
	go db.runIndexer(ix)
}

// committed tells the indexer that a write committed: it may have added
// messages.
func (db *DB) committed() {
	if db.ix == nil {
		return
	}
	select {
	case db.ix.poke <- struct{}{}:
	default: // a poke is already pending
	}
}

// stopIndexer stops the background indexer and indexes what it had not
// reached yet, so that a store closed cleanly is fully indexed (after a
// crash, the next start indexes the rest).
func (db *DB) stopIndexer() {
	if db.ix == nil {
		return
	}
	close(db.ix.quit)
	<-db.ix.done
	if err := db.indexMessages(context.Background()); err != nil {
		db.log.Warn("index messages for search; the next start indexes them", "error", err)
	}
}

func (db *DB) runIndexer(ix *indexer) {
	defer close(ix.done)
	delay := time.NewTimer(ix.delay)
	delay.Stop() // armed at each poke
	for {
		select {
		case <-ix.poke:
		case <-ix.quit:
			return
		}
		delay.Reset(ix.delay)
		select {
		case <-delay.C:
		case <-ix.quit:
			return
		}
		// The indexer's own commit pokes again; the next round then finds
		// nothing to do with one read.
		if err := db.indexMessages(context.Background()); err != nil {
			db.log.Warn("index messages for search; the next search indexes them", "error", err)
		}
	}
}

// indexBatch bounds the messages one indexing transaction takes, so that
// a large import is indexed in steps that sends can come between.
const indexBatch = 2000

// indexMessages indexes every message not indexed yet, indexBatch at a
// time: nothing is written when there is none.
func (db *DB) indexMessages(ctx context.Context) error {
	if db.ix == nil {
		return nil
	}
	for {
		var done, last int64
		err := db.read(ctx, func(conn querier) error {
			return conn.execute(`SELECT (SELECT seq FROM messages_fts_done), (SELECT coalesce(max(seq), 0) FROM messages)`,
				&execOptions{ResultFunc: func(r row) error {
					done, last = r.ColumnInt64(0), r.ColumnInt64(1)
					return nil
				}})
		})
		if err != nil || done >= last {
			return err
		}
		if err := db.writeGrouped(ctx, indexMessagesIn); err != nil {
			return err
		}
	}
}

// indexMessagesIn indexes, in the caller's transaction, up to indexBatch
// messages after the mark and moves the mark to the last of them. It reads
// the mark itself, so it may run twice (writeGrouped) or race a search's
// own call.
func indexMessagesIn(conn querier) error {
	err := conn.execute(`INSERT INTO messages_fts (rowid, content) `+indexNextSQL, nil)
	if err != nil {
		return err
	}
	// A deleted workflow's messages may have been the newest: the mark
	// moves to the last message indexed, never back.
	return conn.execute(`UPDATE messages_fts_done SET seq = coalesce((SELECT max(seq) FROM (`+indexNextSQL+`)), seq)`, nil)
}

// indexNextSQL is the next batch to index: the messages after the mark.
var indexNextSQL = `SELECT seq, content FROM messages WHERE seq > (SELECT seq FROM messages_fts_done) ORDER BY seq LIMIT ` + strconv.Itoa(indexBatch)
