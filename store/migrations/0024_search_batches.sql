-- 0024_search_batches: messages are indexed a batch at a time (issue 30).
--
-- An FTS5 insert in a message's own transaction cost a send 42 % more
-- CPU: every commit that touches an FTS5 table flushes a new segment and
-- rewrites the index's structure record, about seven more pages in the
-- WAL per commit. Now the indexer adds the messages after
-- messages_fts_done.seq to messages_fts, up to 2,000 per transaction (a
-- moment after a burst of sends, and before every search until none is
-- left), and moves the mark in the same transaction. A search therefore
-- sees every message committed before it started, and a crash between a
-- message and its indexing leaves the message to the next batch: seqs are
-- handed out by the one writer in commit order, so everything after the
-- mark is exactly what is not yet indexed.
CREATE TABLE messages_fts_done (
  id  INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL
);
-- Every message so far was indexed in its own transaction.
INSERT INTO messages_fts_done (id, seq) SELECT 1, coalesce(max(seq), 0) FROM messages;
