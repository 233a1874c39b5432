-- 0001_init (PostgreSQL): the PostgreSQL form of the SQLite migrations
-- 0001-0015 (store/migrations/*.sql) as of this commit, as one migration:
-- the PostgreSQL engine starts at today's schema. Tables, columns,
-- constraints and indexes keep their SQLite names and meaning, because the
-- store runs the same SQL text on both engines. The differences, all
-- forced by the engine:
--   * INTEGER is BIGINT (unix milliseconds overflow PostgreSQL's 32-bit
--     INTEGER); flags stay integers 0/1, not booleans. REAL is DOUBLE
--     PRECISION.
--   * AUTOINCREMENT is an identity column, whose sequence never hands out a
--     value twice either.
--   * Tables the store reads in insertion order (ORDER BY rowid: votes,
--     task_events) get an explicit rowid identity column, which SQLite gives
--     every table implicitly.
--   * json_valid, SQLite's built-in, is defined below for the CHECKs.
--   * WITHOUT ROWID has no counterpart (every PostgreSQL table is a heap);
--     tables come in an order where each references only earlier ones.
-- Conventions: timestamps are BIGINT unix milliseconds (UTC) and 0 means
-- "not yet"; optional text is '' rather than NULL, except where NULL carries
-- meaning (messages.to_agent, messages.resource_id). Every child table has an
-- index whose prefix is its foreign key, so cascades never scan.

-- SQLite's json_valid(X): true when X is well-formed JSON, NULL for NULL.
-- The json type (not jsonb) checks syntax only, as SQLite does, so "\u0000"
-- is valid; every malformed input raises a data exception (class 22).
CREATE FUNCTION json_valid(t TEXT) RETURNS BOOLEAN
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
  PERFORM t::json;
  RETURN TRUE;
EXCEPTION WHEN data_exception THEN
  RETURN FALSE;
END
$$;

-- Workflow:tag scopes (0001, states 0007, context 0004, instance 0005,
-- started_at 0006, loop guard 0010, workspace 0014). started_at: when the
-- workflow was last started (not reloaded), so a run's summary counts only
-- that start's runs. loop_guard: how many agent messages in a row pause the
-- workflow (0: off); agent_streak: the length of the current run of agent
-- messages, kept with every message write so the check costs no query.
-- workspace_repo and workspace_base: a git workspace's repository and the
-- branch each agent's worktree starts from, '' without one.
CREATE TABLE workflows (
  name               TEXT NOT NULL CHECK (name <> ''),
  tag                TEXT NOT NULL CHECK (tag <> ''),
  source_path        TEXT NOT NULL DEFAULT '',
  config_yaml        TEXT NOT NULL DEFAULT '',
  state              TEXT NOT NULL DEFAULT 'running'
                     CHECK (state IN ('running', 'paused', 'over_budget', 'failed', 'stopped')),
  error              TEXT NOT NULL DEFAULT '',
  created_at         BIGINT NOT NULL,
  updated_at         BIGINT NOT NULL,
  workdir            TEXT NOT NULL DEFAULT '',
  docs_provider      TEXT NOT NULL DEFAULT '',
  docs_owner         TEXT NOT NULL DEFAULT '',
  long_message_chars BIGINT NOT NULL DEFAULT 0 CHECK (long_message_chars >= 0),
  params_json        TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(params_json)),
  vars_json          TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(vars_json)),
  docs_dir           TEXT NOT NULL DEFAULT '',
  started_at         BIGINT NOT NULL DEFAULT 0,
  loop_guard         BIGINT NOT NULL DEFAULT 0 CHECK (loop_guard >= 0),
  agent_streak       BIGINT NOT NULL DEFAULT 0,
  workspace_repo     TEXT NOT NULL DEFAULT '',
  workspace_base     TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (name, tag)
);

-- Standalone agents live in global:main, which always exists.
INSERT INTO workflows (name, tag, state, created_at, updated_at)
VALUES ('global', 'main', 'running',
        CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT),
        CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT));

-- status: what an agent says it is doing (my_status_set), apart from state,
-- which only the daemon writes (0002). Planners (0015): an agent with
-- can_spawn may start up to max_spawned agents of its own workflow:tag at
-- once; spawned_by names the agent that spawned this one ('' for agents of
-- the file or the CLI).
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
                CHECK (state IN ('idle', 'running', 'paused', 'failed', 'over_budget', 'stopped')),
  task          TEXT NOT NULL DEFAULT '',
  error         TEXT NOT NULL DEFAULT '',
  created_at    BIGINT NOT NULL,
  updated_at    BIGINT NOT NULL,
  status        TEXT NOT NULL DEFAULT '',
  can_spawn     BIGINT NOT NULL DEFAULT 0 CHECK (can_spawn IN (0, 1)),
  max_spawned   BIGINT NOT NULL DEFAULT 0 CHECK (max_spawned >= 0),
  spawned_by    TEXT NOT NULL DEFAULT '',
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
  created_at BIGINT NOT NULL,
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
CREATE INDEX resources_by_workflow ON resources (workflow, tag, created_at);

-- seq is the total order of the channel; an identity so a seq is never
-- reused after a delete, because inbox cursors point at seqs. The kind
-- check is written as comparisons (0012: SQLite's IN built a temporary
-- index on every insert).
CREATE TABLE messages (
  seq         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
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
  created_at  BIGINT NOT NULL,
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
  seq      BIGINT NOT NULL REFERENCES messages (seq) ON DELETE CASCADE,
  PRIMARY KEY (workflow, tag, agent, seq),
  FOREIGN KEY (workflow, tag, agent) REFERENCES agents (workflow, tag, name) ON DELETE CASCADE
);
CREATE INDEX message_recipients_by_seq ON message_recipients (seq);

CREATE TABLE inbox_ack (
  workflow   TEXT NOT NULL,
  tag        TEXT NOT NULL,
  agent      TEXT NOT NULL,
  cursor     BIGINT NOT NULL DEFAULT 0,      -- last acked messages.seq
  updated_at BIGINT NOT NULL,
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
  quorum       BIGINT NOT NULL DEFAULT 0,
  binding      BIGINT NOT NULL DEFAULT 0 CHECK (binding IN (0, 1)),
  state        TEXT NOT NULL DEFAULT 'active'
               CHECK (state IN ('active', 'resolved', 'expired', 'cancelled')),
  winner       TEXT NOT NULL DEFAULT '',
  resolved_by  TEXT NOT NULL DEFAULT '',
  created_at   BIGINT NOT NULL,
  expires_at   BIGINT NOT NULL DEFAULT 0,
  resolved_at  BIGINT NOT NULL DEFAULT 0,
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
CREATE INDEX proposals_by_workflow ON proposals (workflow, tag, state);
-- The daemon's expiry timer asks for the earliest deadline of the active
-- proposals of every scope (0003).
CREATE INDEX proposals_active_by_expiry ON proposals (expires_at) WHERE state = 'active';

-- rowid: votes are listed by created_at, then in the order they were cast.
CREATE TABLE votes (
  rowid       BIGINT GENERATED ALWAYS AS IDENTITY,
  proposal_id TEXT NOT NULL REFERENCES proposals (id) ON DELETE CASCADE,
  voter       TEXT NOT NULL,
  choice      TEXT NOT NULL,
  reason      TEXT NOT NULL DEFAULT '',
  created_at  BIGINT NOT NULL,
  PRIMARY KEY (proposal_id, voter)
);

-- The results of binding proposals, which agents must follow.
CREATE TABLE decisions (
  proposal_id TEXT PRIMARY KEY REFERENCES proposals (id) ON DELETE CASCADE,
  workflow    TEXT NOT NULL,
  tag         TEXT NOT NULL,
  title       TEXT NOT NULL,
  winner      TEXT NOT NULL,
  created_at  BIGINT NOT NULL,
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
  attempt         BIGINT NOT NULL DEFAULT 1,
  state           TEXT NOT NULL DEFAULT 'queued'
                  CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out')),
  started_at      BIGINT NOT NULL DEFAULT 0,
  ended_at        BIGINT NOT NULL DEFAULT 0,
  inbox_until_seq BIGINT NOT NULL DEFAULT 0, -- highest seq the run was shown
  error           TEXT NOT NULL DEFAULT '',
  usage_json      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(usage_json)),
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
CREATE INDEX runs_by_agent ON runs (workflow, tag, agent, started_at);
CREATE INDEX runs_by_state ON runs (state) WHERE state IN ('queued', 'running');

CREATE TABLE run_events (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  n      BIGINT NOT NULL,
  kind   TEXT NOT NULL,
  data   TEXT NOT NULL DEFAULT '',
  at     BIGINT NOT NULL,
  PRIMARY KEY (run_id, n)
);

-- No foreign key on purpose: a worker row must outlive its run's deletion
-- so that the daemon can still reap the process at start-up.
CREATE TABLE workers (
  run_id        TEXT PRIMARY KEY,
  pid           BIGINT NOT NULL,
  pgid          BIGINT NOT NULL,
  plugin_path   TEXT NOT NULL,
  plugin_sha256 TEXT NOT NULL DEFAULT '',
  state         TEXT NOT NULL DEFAULT 'running',
  started_at    BIGINT NOT NULL,
  heartbeat_at  BIGINT NOT NULL DEFAULT 0
);

-- Backend session ids, so that a CLI backend can resume its conversation.
CREATE TABLE sessions (
  workflow   TEXT NOT NULL,
  tag        TEXT NOT NULL,
  agent      TEXT NOT NULL,
  backend    TEXT NOT NULL,
  session_id TEXT NOT NULL,
  updated_at BIGINT NOT NULL,
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
  created_at   BIGINT NOT NULL,
  revoked_at   BIGINT NOT NULL DEFAULT 0,
  FOREIGN KEY (workflow, tag, agent) REFERENCES agents (workflow, tag, name) ON DELETE CASCADE
);
CREATE INDEX agent_tokens_by_agent ON agent_tokens (workflow, tag, agent);
CREATE INDEX agent_tokens_by_run ON agent_tokens (run_id);

-- Named counters that only go up, so that an id such as prop-N or task-N
-- is never reused, even after its row is deleted with its workflow (0003).
-- 'task' is created by the first task.
CREATE TABLE counters (
  name  TEXT PRIMARY KEY,
  value BIGINT NOT NULL
);
INSERT INTO counters (name, value) VALUES ('proposal', 0);

-- Webhook triggers of each workflow:tag, as its last good config defines
-- them (message with every variable but ${{ body.X }} filled in), and the
-- delivery ids seen in the last 24 hours, so a webhook sent twice posts
-- once (0008).
CREATE TABLE triggers (
  workflow   TEXT NOT NULL,
  tag        TEXT NOT NULL,
  name       TEXT NOT NULL CHECK (name <> ''),
  secret_env TEXT NOT NULL CHECK (secret_env <> ''),
  message    TEXT NOT NULL,
  line       BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (workflow, tag, name),
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);

-- Not tied to triggers: a reload that rewrites a trigger keeps its ids.
CREATE TABLE webhook_deliveries (
  workflow    TEXT NOT NULL,
  tag         TEXT NOT NULL,
  trigger     TEXT NOT NULL,
  delivery_id TEXT NOT NULL CHECK (delivery_id <> ''),
  seq         BIGINT NOT NULL,
  received_at BIGINT NOT NULL,
  PRIMARY KEY (workflow, tag, trigger, delivery_id),
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);

-- Budgets: what a workflow:tag (agent '') or one of its agents may spend
-- since the workflow (re)started. NULL limits are unset (0011).
CREATE TABLE budgets (
  workflow   TEXT NOT NULL,
  tag        TEXT NOT NULL,
  agent      TEXT NOT NULL DEFAULT '',
  usd        DOUBLE PRECISION CHECK (usd IS NULL OR usd >= 0),
  tokens     BIGINT CHECK (tokens IS NULL OR tokens >= 0),
  runs       BIGINT CHECK (runs IS NULL OR runs >= 0),
  hard       BIGINT NOT NULL DEFAULT 0 CHECK (hard IN (0, 1)),
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (workflow, tag, agent),
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);

-- The task board of each workflow:tag (0013). A task is pending → claimed →
-- in_progress → completed | failed. While it is claimed or in progress it
-- has a holder (an agent), the run that holds its lease ('' for an outside
-- agent, which has no run) and the lease's expiry; the run's end or the
-- expiry sends it back to pending. Ids are task-N from counters, never
-- reused; n is N, for order.
CREATE TABLE tasks (
  id               TEXT PRIMARY KEY,
  n                BIGINT NOT NULL UNIQUE,
  workflow         TEXT NOT NULL,
  tag              TEXT NOT NULL,
  title            TEXT NOT NULL CHECK (title <> ''),
  description      TEXT NOT NULL DEFAULT '',
  priority         BIGINT NOT NULL DEFAULT 0,
  parent           TEXT REFERENCES tasks (id) ON DELETE CASCADE,
  assignee         TEXT NOT NULL DEFAULT '',
  created_by       TEXT NOT NULL,
  state            TEXT NOT NULL DEFAULT 'pending'
                   CHECK (state = 'pending' OR state = 'claimed' OR state = 'in_progress'
                          OR state = 'completed' OR state = 'failed'),
  holder           TEXT NOT NULL DEFAULT '',
  holder_run       TEXT NOT NULL DEFAULT '',
  lease_expires_at BIGINT NOT NULL DEFAULT 0,
  percent          BIGINT CHECK (percent IS NULL OR (percent >= 0 AND percent <= 100)),
  result           TEXT NOT NULL DEFAULT '',
  error            TEXT NOT NULL DEFAULT '',
  retries          BIGINT NOT NULL DEFAULT 0 CHECK (retries >= 0),
  max_retries      BIGINT NOT NULL DEFAULT 2 CHECK (max_retries >= 0),
  created_at       BIGINT NOT NULL,
  updated_at       BIGINT NOT NULL,
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
CREATE INDEX tasks_by_workflow ON tasks (workflow, tag, state);
CREATE INDEX tasks_by_parent ON tasks (parent) WHERE parent IS NOT NULL;
-- The lease sweep and its timer read only the held tasks.
CREATE INDEX tasks_held ON tasks (lease_expires_at) WHERE state = 'claimed' OR state = 'in_progress';
-- A run's heartbeat renews the leases it holds.
CREATE INDEX tasks_by_holder_run ON tasks (holder_run) WHERE holder_run <> '';

-- depends_on: task_id may be claimed only once every dep_id is completed.
CREATE TABLE task_deps (
  task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  dep_id  TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  PRIMARY KEY (task_id, dep_id)
);
CREATE INDEX task_deps_by_dep ON task_deps (dep_id, task_id);

-- A task's history: every state change and progress note, oldest first
-- (by rowid). state is the task's state after the event; percent is set
-- by progress notes that give one.
CREATE TABLE task_events (
  rowid   BIGINT GENERATED ALWAYS AS IDENTITY,
  task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  at      BIGINT NOT NULL,
  actor   TEXT NOT NULL,
  kind    TEXT NOT NULL,
  state   TEXT NOT NULL,
  note    TEXT NOT NULL DEFAULT '',
  percent BIGINT
);
CREATE INDEX task_events_by_task ON task_events (task_id);
