-- 0026_efforts: procedures (issue 43). A work directory (the seed's
-- "task": it never finishes) numbers the efforts applied to it 1, 2, 3,
-- across workflows; work_dirs keeps the last number handed out, taken by
-- an upsert in the starting effort's own transaction.
CREATE TABLE work_dirs (
  dir          TEXT PRIMARY KEY CHECK (dir <> ''),
  last_ordinal INTEGER NOT NULL CHECK (last_ordinal >= 1),
  created_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- An effort: a skill applied to a directory by one agent. id is effort-N
-- (counters, as tasks), n is N for order. skill_json is the skill as it
-- was at the start (the host's snapshot: an edit of the file mid-effort
-- does not change the walk), phases_json its phase names. phase is the
-- index of the current phase; nonce the current continue token's ('' once
-- ended). context_tokens and context_window are what the host last said of
-- the agent's context (NULL: unknown). dirs_json and directives_json are
-- the directories the effort touched and the directive files already
-- brought in, in the order they came. No foreign key to agents or
-- workflows on purpose: an effort belongs to its directory and outlives
-- the agent that walked it (an active one then shows without an agent).
-- At most one active effort per agent: efforts_one_active.
CREATE TABLE efforts (
  id              TEXT PRIMARY KEY,
  n               INTEGER NOT NULL UNIQUE,
  workflow        TEXT NOT NULL,
  tag             TEXT NOT NULL,
  agent           TEXT NOT NULL,
  dir             TEXT NOT NULL REFERENCES work_dirs (dir),
  ordinal         INTEGER NOT NULL CHECK (ordinal >= 1),
  skill           TEXT NOT NULL CHECK (skill <> ''),
  skill_json      TEXT NOT NULL CHECK (json_valid(skill_json)),
  phases_json     TEXT NOT NULL CHECK (json_valid(phases_json)),
  mode            TEXT NOT NULL DEFAULT '',
  state           TEXT NOT NULL DEFAULT 'active'
                  CHECK (state = 'active' OR state = 'finished' OR state = 'abandoned'),
  phase           INTEGER NOT NULL DEFAULT 0 CHECK (phase >= 0),
  phase_name      TEXT NOT NULL,
  nonce           TEXT NOT NULL DEFAULT '',
  reason          TEXT NOT NULL DEFAULT '',
  started_at      INTEGER NOT NULL,
  ended_at        INTEGER NOT NULL DEFAULT 0,
  heartbeat_at    INTEGER NOT NULL,
  context_tokens  INTEGER,
  context_window  INTEGER,
  dirs_json       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(dirs_json)),
  directives_json TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(directives_json)),
  UNIQUE (dir, ordinal)
);
CREATE UNIQUE INDEX efforts_one_active ON efforts (workflow, tag, agent) WHERE state = 'active';
CREATE INDEX efforts_by_agent ON efforts (workflow, tag, agent, n);
CREATE INDEX efforts_by_state ON efforts (state, n);

-- An effort's history, n = 1, 2, 3: every phase entered and completed, and
-- its end. A completed or finished checkpoint keeps the phase's proof
-- (object), notes and the evidence that met it (list); dirs_json is the
-- effort's directories at that moment; run_id the run that asked ('' for
-- an outside agent or the user).
CREATE TABLE effort_checkpoints (
  effort_id     TEXT NOT NULL REFERENCES efforts (id) ON DELETE CASCADE,
  n             INTEGER NOT NULL,
  phase         INTEGER NOT NULL,
  phase_name    TEXT NOT NULL,
  kind          TEXT NOT NULL
                CHECK (kind = 'entered' OR kind = 'completed' OR kind = 'finished' OR kind = 'abandoned'),
  proof_json    TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(proof_json)),
  notes         TEXT NOT NULL DEFAULT '',
  evidence_json TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(evidence_json)),
  dirs_json     TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(dirs_json)),
  run_id        TEXT NOT NULL DEFAULT '',
  at            INTEGER NOT NULL,
  PRIMARY KEY (effort_id, n)
) WITHOUT ROWID;

-- What the daemon saw a run do in a phase, the evidence a phase's end is
-- checked against: a shell command (subject: the command line, exit_code
-- its status), a file written (its path) or a tool called (its name).
-- n counts 1, 2, 3 within the phase.
CREATE TABLE effort_observations (
  effort_id TEXT NOT NULL REFERENCES efforts (id) ON DELETE CASCADE,
  phase     INTEGER NOT NULL,
  n         INTEGER NOT NULL,
  kind      TEXT NOT NULL CHECK (kind = 'shell' OR kind = 'file' OR kind = 'tool'),
  subject   TEXT NOT NULL,
  exit_code INTEGER,
  run_id    TEXT NOT NULL DEFAULT '',
  at        INTEGER NOT NULL,
  PRIMARY KEY (effort_id, phase, n)
) WITHOUT ROWID;
