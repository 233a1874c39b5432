-- SQLite's 0027_live_sessions: a live Claude Code session as a context
-- window (issue 44), one row per Claude session id, chained by
-- prev_session_id.
CREATE TABLE live_sessions (
  session_id        TEXT PRIMARY KEY CHECK (session_id <> ''),
  workflow          TEXT NOT NULL,
  tag               TEXT NOT NULL,
  agent             TEXT NOT NULL,
  prev_session_id   TEXT NOT NULL DEFAULT '',
  effort_id         TEXT NOT NULL DEFAULT '',
  run_id            TEXT NOT NULL DEFAULT '',
  cwd               TEXT NOT NULL DEFAULT '',
  started_at        BIGINT NOT NULL,
  heartbeat_at      BIGINT NOT NULL,
  heartbeats        BIGINT NOT NULL DEFAULT 0,
  context_tokens    BIGINT NOT NULL DEFAULT 0,
  loaded_json       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(loaded_json)),
  dehydration       TEXT NOT NULL DEFAULT '',
  dehydrated_at     BIGINT NOT NULL DEFAULT 0,
  dehydration_given INTEGER NOT NULL DEFAULT 0,
  ended_at          BIGINT NOT NULL DEFAULT 0,
  FOREIGN KEY (workflow, tag, agent) REFERENCES agents (workflow, tag, name) ON DELETE CASCADE
);
CREATE INDEX live_sessions_by_agent ON live_sessions (workflow, tag, agent, started_at);
