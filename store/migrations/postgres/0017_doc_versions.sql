-- SQLite's 0032_doc_versions: each version of a team's documents, with
-- the channel's newest seq when it was written; the newest 50 are kept.
CREATE TABLE doc_versions (
  id       BIGSERIAL PRIMARY KEY,
  workflow TEXT NOT NULL,
  tag      TEXT NOT NULL,
  path     TEXT NOT NULL,
  n        BIGINT NOT NULL,
  seq      BIGINT NOT NULL,
  content  TEXT NOT NULL,
  at       BIGINT NOT NULL
);
CREATE INDEX doc_versions_by_doc ON doc_versions (workflow, tag, path, seq);
