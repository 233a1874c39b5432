-- 0032_doc_versions: each version of a team's documents (issue 46, fork),
-- recorded with the channel's newest seq when it was written, so that a
-- fork at a seq restores the documents as they were then. n counts a
-- document's versions from 1 (its creation); the newest 50 are kept.
CREATE TABLE doc_versions (
  id       INTEGER PRIMARY KEY AUTOINCREMENT,
  workflow TEXT NOT NULL,
  tag      TEXT NOT NULL,
  path     TEXT NOT NULL,
  n        INTEGER NOT NULL,
  seq      INTEGER NOT NULL,
  content  TEXT NOT NULL,
  at       INTEGER NOT NULL
);
CREATE INDEX doc_versions_by_doc ON doc_versions (workflow, tag, path, seq);
