-- 0021_sessions: outside Claude Code sessions attached to agents through
-- its hooks (issue 30; `agent-worker hooks install`). One row per agent:
-- the session acting as it now. A SessionStart (or any later hook of a
-- session the daemon missed) writes it, every hook moves its heartbeat,
-- SessionEnd deletes it.
CREATE TABLE agent_sessions (
  workflow     TEXT NOT NULL,
  tag          TEXT NOT NULL,
  agent        TEXT NOT NULL,
  session_id   TEXT NOT NULL CHECK (session_id <> ''),
  cwd          TEXT NOT NULL DEFAULT '',
  attached_at  INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  PRIMARY KEY (workflow, tag, agent),
  FOREIGN KEY (workflow, tag, agent) REFERENCES agents (workflow, tag, name) ON DELETE CASCADE
) WITHOUT ROWID;
