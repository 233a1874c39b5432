-- 0027_live_sessions: a live Claude Code session as a context window
-- (issue 44). One row per Claude session id, kept after the session ends
-- so that the chain stays: prev_session_id is the session it continues
-- ('' for none). effort_id is the agent's active effort when it started
-- ('' for none). run_id is the pseudo-run holding its transcript (the
-- person's prompts and the session's tool calls, in run_events).
-- loaded_json lists the files its Read calls loaded; context_tokens is the
-- context it last used (0: unknown). dehydration is what PreCompact
-- stored for the next context window ('' for none); dehydration_given
-- says a SessionStart has injected it. ended_at is 0 while open.
CREATE TABLE live_sessions (
  session_id        TEXT PRIMARY KEY CHECK (session_id <> ''),
  workflow          TEXT NOT NULL,
  tag               TEXT NOT NULL,
  agent             TEXT NOT NULL,
  prev_session_id   TEXT NOT NULL DEFAULT '',
  effort_id         TEXT NOT NULL DEFAULT '',
  run_id            TEXT NOT NULL DEFAULT '',
  cwd               TEXT NOT NULL DEFAULT '',
  started_at        INTEGER NOT NULL,
  heartbeat_at      INTEGER NOT NULL,
  heartbeats        INTEGER NOT NULL DEFAULT 0,
  context_tokens    INTEGER NOT NULL DEFAULT 0,
  loaded_json       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(loaded_json)),
  dehydration       TEXT NOT NULL DEFAULT '',
  dehydrated_at     INTEGER NOT NULL DEFAULT 0,
  dehydration_given INTEGER NOT NULL DEFAULT 0,
  ended_at          INTEGER NOT NULL DEFAULT 0,
  FOREIGN KEY (workflow, tag, agent) REFERENCES agents (workflow, tag, name) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX live_sessions_by_agent ON live_sessions (workflow, tag, agent, started_at);
