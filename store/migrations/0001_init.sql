-- 0001_init: the full schema of the design.
-- Conventions: timestamps are INTEGER unix milliseconds (UTC) and 0 means
-- "not yet"; optional text is '' rather than NULL, except where NULL carries
-- meaning (messages.to_agent, messages.resource_id). Every child table has an
-- index whose prefix is its foreign key, so cascades never scan.

CREATE TABLE workflows (
  name        TEXT NOT NULL CHECK (name <> ''),
  tag         TEXT NOT NULL CHECK (tag <> ''),
  source_path TEXT NOT NULL DEFAULT '',
  config_yaml TEXT NOT NULL DEFAULT '',
  state       TEXT NOT NULL DEFAULT 'running'
              CHECK (state IN ('running', 'stopped', 'failed')),
  error       TEXT NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (name, tag)
);

-- Standalone agents live in global:main, which always exists.
INSERT INTO workflows (name, tag, state, created_at, updated_at)
VALUES ('global', 'main', 'running',
        CAST(unixepoch('subsec') * 1000 AS INTEGER),
        CAST(unixepoch('subsec') * 1000 AS INTEGER));

CREATE TABLE agents (
  name          TEXT NOT NULL CHECK (name <> ''),
  workflow      TEXT NOT NULL,
  tag           TEXT NOT NULL,
  backend       TEXT NOT NULL DEFAULT '',
  model         TEXT NOT NULL DEFAULT '',
  system        TEXT NOT NULL DEFAULT '',
  schedule      TEXT NOT NULL DEFAULT '',
  wakeup_prompt TEXT NOT NULL DEFAULT '',
  config_json   TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(config_json)),
  state         TEXT NOT NULL DEFAULT 'idle'
                CHECK (state IN ('idle', 'running', 'failed', 'stopped')),
  task          TEXT NOT NULL DEFAULT '',
  error         TEXT NOT NULL DEFAULT '',
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  PRIMARY KEY (workflow, tag, name),
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);

CREATE TABLE resources (
  id         TEXT PRIMARY KEY,
  workflow   TEXT NOT NULL,
  tag        TEXT NOT NULL,
  type       TEXT NOT NULL DEFAULT 'text'
             CHECK (type IN ('markdown', 'json', 'text', 'diff')),
  content    TEXT NOT NULL,
  created_by TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
CREATE INDEX resources_by_workflow ON resources (workflow, tag, created_at);

-- seq is the total order of the channel; AUTOINCREMENT so a seq is never
-- reused after a delete, because inbox cursors point at seqs.
CREATE TABLE messages (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  id          TEXT NOT NULL UNIQUE,
  workflow    TEXT NOT NULL,
  tag         TEXT NOT NULL,
  sender      TEXT NOT NULL,
  content     TEXT NOT NULL,
  kind        TEXT NOT NULL DEFAULT 'message'
              CHECK (kind IN ('message', 'system', 'tool')),
  to_agent    TEXT,                          -- DM recipient, NULL for the channel
  recipients  TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(recipients)),
  resource_id TEXT REFERENCES resources (id) ON DELETE SET NULL,
  created_at  INTEGER NOT NULL,
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
CREATE INDEX messages_by_workflow ON messages (workflow, tag, seq);
CREATE INDEX messages_by_resource ON messages (resource_id) WHERE resource_id IS NOT NULL;

-- The inbox index: one row per (recipient, message), @all expanded at write
-- time, so an inbox read is a primary-key range scan.
CREATE TABLE message_recipients (
  workflow TEXT NOT NULL,
  tag      TEXT NOT NULL,
  agent    TEXT NOT NULL,
  seq      INTEGER NOT NULL REFERENCES messages (seq) ON DELETE CASCADE,
  PRIMARY KEY (workflow, tag, agent, seq),
  FOREIGN KEY (workflow, tag, agent) REFERENCES agents (workflow, tag, name) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX message_recipients_by_seq ON message_recipients (seq);

CREATE TABLE inbox_ack (
  workflow   TEXT NOT NULL,
  tag        TEXT NOT NULL,
  agent      TEXT NOT NULL,
  cursor     INTEGER NOT NULL DEFAULT 0,     -- last acked messages.seq
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (workflow, tag, agent),
  FOREIGN KEY (workflow, tag, agent) REFERENCES agents (workflow, tag, name) ON DELETE CASCADE
);

CREATE TABLE proposals (
  id           TEXT PRIMARY KEY,
  workflow     TEXT NOT NULL,
  tag          TEXT NOT NULL,
  creator      TEXT NOT NULL,
  type         TEXT NOT NULL
               CHECK (type IN ('election', 'decision', 'approval', 'assignment')),
  title        TEXT NOT NULL,
  options_json TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(options_json)),
  resolution   TEXT NOT NULL DEFAULT 'plurality'
               CHECK (resolution IN ('plurality', 'majority', 'unanimous')),
  tie_breaker  TEXT NOT NULL DEFAULT 'first'
               CHECK (tie_breaker IN ('first', 'creator-decides')),
  quorum       INTEGER NOT NULL DEFAULT 0,
  binding      INTEGER NOT NULL DEFAULT 0 CHECK (binding IN (0, 1)),
  state        TEXT NOT NULL DEFAULT 'active'
               CHECK (state IN ('active', 'resolved', 'expired', 'cancelled')),
  winner       TEXT NOT NULL DEFAULT '',
  resolved_by  TEXT NOT NULL DEFAULT '',
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL DEFAULT 0,
  resolved_at  INTEGER NOT NULL DEFAULT 0,
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
CREATE INDEX proposals_by_workflow ON proposals (workflow, tag, state);

CREATE TABLE votes (
  proposal_id TEXT NOT NULL REFERENCES proposals (id) ON DELETE CASCADE,
  voter       TEXT NOT NULL,
  choice      TEXT NOT NULL,
  reason      TEXT NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (proposal_id, voter)
);

-- The results of binding proposals, which agents must follow.
CREATE TABLE decisions (
  proposal_id TEXT PRIMARY KEY REFERENCES proposals (id) ON DELETE CASCADE,
  workflow    TEXT NOT NULL,
  tag         TEXT NOT NULL,
  title       TEXT NOT NULL,
  winner      TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
CREATE INDEX decisions_by_workflow ON decisions (workflow, tag, created_at);

-- Runs stay after their agent is deleted: they are the history.
CREATE TABLE runs (
  id              TEXT PRIMARY KEY,
  agent           TEXT NOT NULL,
  workflow        TEXT NOT NULL,
  tag             TEXT NOT NULL,
  backend         TEXT NOT NULL,
  plugin_sha256   TEXT NOT NULL DEFAULT '',
  attempt         INTEGER NOT NULL DEFAULT 1,
  state           TEXT NOT NULL DEFAULT 'queued'
                  CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  started_at      INTEGER NOT NULL DEFAULT 0,
  ended_at        INTEGER NOT NULL DEFAULT 0,
  inbox_until_seq INTEGER NOT NULL DEFAULT 0, -- highest seq the run was shown
  error           TEXT NOT NULL DEFAULT '',
  usage_json      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(usage_json)),
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
CREATE INDEX runs_by_agent ON runs (workflow, tag, agent, started_at);
CREATE INDEX runs_by_state ON runs (state) WHERE state IN ('queued', 'running');

CREATE TABLE run_events (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  n      INTEGER NOT NULL,
  kind   TEXT NOT NULL,
  data   TEXT NOT NULL DEFAULT '',
  at     INTEGER NOT NULL,
  PRIMARY KEY (run_id, n)
) WITHOUT ROWID;

-- No foreign key on purpose: a worker row must outlive its run's deletion
-- so that the daemon can still reap the process at start-up.
CREATE TABLE workers (
  run_id        TEXT PRIMARY KEY,
  pid           INTEGER NOT NULL,
  pgid          INTEGER NOT NULL,
  plugin_path   TEXT NOT NULL,
  plugin_sha256 TEXT NOT NULL DEFAULT '',
  state         TEXT NOT NULL DEFAULT 'running',
  started_at    INTEGER NOT NULL,
  heartbeat_at  INTEGER NOT NULL DEFAULT 0
);

-- Backend session ids, so that a CLI backend can resume its conversation.
CREATE TABLE sessions (
  workflow   TEXT NOT NULL,
  tag        TEXT NOT NULL,
  agent      TEXT NOT NULL,
  backend    TEXT NOT NULL,
  session_id TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (workflow, tag, agent, backend),
  FOREIGN KEY (workflow, tag, agent) REFERENCES agents (workflow, tag, name) ON DELETE CASCADE
);

-- Only the hash of a run's bearer token is kept; deleting the agent kills it.
CREATE TABLE agent_tokens (
  token_sha256 TEXT PRIMARY KEY,
  agent        TEXT NOT NULL,
  workflow     TEXT NOT NULL,
  tag          TEXT NOT NULL,
  run_id       TEXT NOT NULL DEFAULT '',
  created_at   INTEGER NOT NULL,
  revoked_at   INTEGER NOT NULL DEFAULT 0,
  FOREIGN KEY (workflow, tag, agent) REFERENCES agents (workflow, tag, name) ON DELETE CASCADE
);
CREATE INDEX agent_tokens_by_agent ON agent_tokens (workflow, tag, agent);
CREATE INDEX agent_tokens_by_run ON agent_tokens (run_id);
