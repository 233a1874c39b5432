-- 0020_search: full-text search (issue 30). FTS5 with the porter stemmer
-- ("migrating" finds "migration"), unicode61 folding case and accents.
--
-- messages_fts indexes the channel's text without a second copy of it: its
-- content is messages.content (external content, rowid = seq).
-- appendMessage indexes each message in the transaction that writes it
-- (an explicit insert: a trigger would give every message insert a
-- statement journal). Snippets are read back from messages. When a
-- workflow is deleted its messages' entries stay behind, unreachable:
-- seqs are never reused (AUTOINCREMENT) and hits are joined to messages;
-- 'rebuild' drops them.
CREATE VIRTUAL TABLE messages_fts USING fts5(
  content,
  content = 'messages', content_rowid = 'seq',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');

-- search_text is the searchable text of what is not a message: a document's
-- current content (kind doc, ref = its path, n = 0; replaced on every write
-- through the daemon) and the text and tool results of run transcripts
-- (kind run, ref = the run id, n = the event's number). Its FTS index is
-- kept in step by triggers; nothing writes it on the channel's hot path.
CREATE TABLE search_text (
  id       INTEGER PRIMARY KEY,
  kind     TEXT NOT NULL CHECK (kind = 'doc' OR kind = 'run'),
  workflow TEXT NOT NULL,
  tag      TEXT NOT NULL,
  ref      TEXT NOT NULL,
  n        INTEGER NOT NULL DEFAULT 0,
  agent    TEXT NOT NULL DEFAULT '',  -- a run's agent; '' for a document
  body     TEXT NOT NULL,
  at       INTEGER NOT NULL,
  UNIQUE (kind, workflow, tag, ref, n)
);
CREATE VIRTUAL TABLE search_text_fts USING fts5(
  body,
  content = 'search_text', content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER search_text_ai AFTER INSERT ON search_text BEGIN
  INSERT INTO search_text_fts (rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER search_text_ad AFTER DELETE ON search_text BEGIN
  INSERT INTO search_text_fts (search_text_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;
CREATE TRIGGER search_text_au AFTER UPDATE OF body ON search_text BEGIN
  INSERT INTO search_text_fts (search_text_fts, rowid, body) VALUES ('delete', old.id, old.body);
  INSERT INTO search_text_fts (rowid, body) VALUES (new.id, new.body);
END;

-- The transcripts recorded so far: text and final results keep their text
-- in $.text, tool results in $.Result.
INSERT INTO search_text (kind, workflow, tag, ref, n, agent, body, at)
SELECT 'run', r.workflow, r.tag, e.run_id, e.n, r.agent,
       CASE WHEN e.kind = 'tool_result' THEN json_extract(e.data, '$.Result') ELSE json_extract(e.data, '$.text') END,
       e.at
FROM run_events AS e JOIN runs AS r ON r.id = e.run_id
WHERE e.kind IN ('text', 'result', 'tool_result') AND json_valid(e.data)
  AND coalesce(CASE WHEN e.kind = 'tool_result' THEN json_extract(e.data, '$.Result') ELSE json_extract(e.data, '$.text') END, '') <> '';
