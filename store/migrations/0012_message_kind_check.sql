-- The messages table, rebuilt with its kind check written as comparisons.
-- SQLite checks `kind IN ('message', 'system', 'tool')` by building a
-- temporary index on every insert, which is most of a channel message's
-- cost; the meaning is unchanged. The sequence is carried over, so that a
-- seq is never reused (inbox cursors point at seqs).

CREATE TABLE messages_new (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  id          TEXT NOT NULL UNIQUE,
  workflow    TEXT NOT NULL,
  tag         TEXT NOT NULL,
  sender      TEXT NOT NULL,
  content     TEXT NOT NULL,
  kind        TEXT NOT NULL DEFAULT 'message'
              CHECK (kind = 'message' OR kind = 'system' OR kind = 'tool'),
  to_agent    TEXT,                          -- DM recipient, NULL for the channel
  recipients  TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(recipients)),
  resource_id TEXT REFERENCES resources (id) ON DELETE SET NULL,
  created_at  INTEGER NOT NULL,
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
INSERT INTO messages_new (seq, id, workflow, tag, sender, content, kind, to_agent, recipients, resource_id, created_at)
SELECT seq, id, workflow, tag, sender, content, kind, to_agent, recipients, resource_id, created_at FROM messages;
INSERT INTO sqlite_sequence (name, seq)
SELECT 'messages_new', seq FROM sqlite_sequence WHERE name = 'messages'
  AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'messages_new');
UPDATE sqlite_sequence SET seq = max(seq, (SELECT seq FROM sqlite_sequence WHERE name = 'messages'))
WHERE name = 'messages_new' AND EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'messages');
DROP TABLE messages;
ALTER TABLE messages_new RENAME TO messages;
CREATE INDEX messages_by_workflow ON messages (workflow, tag, seq);
CREATE INDEX messages_by_resource ON messages (resource_id) WHERE resource_id IS NOT NULL;
