-- SQLite's 0023_merge_queue. -- The merge queue (workspace: {checks: [...]}): a branch an integrate put
-- in line for its base, one row per request. The engine moves an entry
-- queued → checking → landing → landed, or to failed; dequeue removes it.
-- landing records the base's commit before (base_commit) and the merge
-- the base is about to be moved to (commit) before git moves it, so a
-- daemon that dies in between finishes the move, or sees it done, on its
-- next start, and never lands a branch twice.
CREATE TABLE merge_queue (
  id           TEXT PRIMARY KEY,
  workflow     TEXT NOT NULL,
  tag          TEXT NOT NULL,
  base         TEXT NOT NULL,
  agent        TEXT NOT NULL,
  branch       TEXT NOT NULL,
  requested_by TEXT NOT NULL,
  state        TEXT NOT NULL DEFAULT 'queued'
               CHECK (state IN ('queued', 'checking', 'landing', 'landed', 'failed', 'removed')),
  seq          BIGINT NOT NULL,
  head         TEXT NOT NULL DEFAULT '',
  base_commit  TEXT NOT NULL DEFAULT '',
  commit_sha   TEXT NOT NULL DEFAULT '',
  command      TEXT NOT NULL DEFAULT '',
  output       TEXT NOT NULL DEFAULT '',
  reason       TEXT NOT NULL DEFAULT '',
  files_json   TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(files_json)),
  attempts     BIGINT NOT NULL DEFAULT 0,
  created_at   BIGINT NOT NULL,
  started_at   BIGINT NOT NULL DEFAULT 0,
  ended_at     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX merge_queue_by_queue ON merge_queue (workflow, tag, base, state, seq);
CREATE INDEX merge_queue_by_state ON merge_queue (state);

-- Every check command run for a batch, kept for each entry of the batch
-- (`agent-worker worktree queue show <id>`); output is its last 64 KiB.
CREATE TABLE merge_queue_checks (
  entry_id    TEXT NOT NULL REFERENCES merge_queue (id) ON DELETE CASCADE,
  n           BIGINT NOT NULL,
  batch_json  TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(batch_json)),
  command     TEXT NOT NULL,
  exit_code   BIGINT NOT NULL,
  timed_out   BOOLEAN NOT NULL DEFAULT FALSE,
  duration_ms BIGINT NOT NULL,
  output      TEXT NOT NULL DEFAULT '',
  at          BIGINT NOT NULL,
  PRIMARY KEY (entry_id, n)
);
