-- SQLite's 0021_sessions: outside Claude Code sessions attached to agents
-- through its hooks (issue 30). One row per agent: the session acting as
-- it now.
CREATE TABLE agent_sessions (
  workflow     TEXT NOT NULL,
  tag          TEXT NOT NULL,
  agent        TEXT NOT NULL,
  session_id   TEXT NOT NULL CHECK (session_id <> ''),
  cwd          TEXT NOT NULL DEFAULT '',
  attached_at  BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL,
  PRIMARY KEY (workflow, tag, agent),
  FOREIGN KEY (workflow, tag, agent) REFERENCES agents (workflow, tag, name) ON DELETE CASCADE
);
