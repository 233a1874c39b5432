-- The second wave's states: agents may be paused or over_budget, runs may
-- time out, workflows may be paused or over_budget. SQLite cannot change a
-- CHECK in place, so each table is rebuilt (migrations run with foreign
-- keys off and are checked with foreign_key_check afterwards).

CREATE TABLE agents_new (
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
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  status        TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (workflow, tag, name),
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
INSERT INTO agents_new (name, workflow, tag, backend, model, system, schedule, wakeup_prompt,
                        config_json, state, task, error, created_at, updated_at, status)
SELECT name, workflow, tag, backend, model, system, schedule, wakeup_prompt,
       config_json, state, task, error, created_at, updated_at, status FROM agents;
DROP TABLE agents;
ALTER TABLE agents_new RENAME TO agents;

CREATE TABLE runs_new (
  id              TEXT PRIMARY KEY,
  agent           TEXT NOT NULL,
  workflow        TEXT NOT NULL,
  tag             TEXT NOT NULL,
  backend         TEXT NOT NULL,
  plugin_sha256   TEXT NOT NULL DEFAULT '',
  attempt         INTEGER NOT NULL DEFAULT 1,
  state           TEXT NOT NULL DEFAULT 'queued'
                  CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out')),
  started_at      INTEGER NOT NULL DEFAULT 0,
  ended_at        INTEGER NOT NULL DEFAULT 0,
  inbox_until_seq INTEGER NOT NULL DEFAULT 0, -- highest seq the run was shown
  error           TEXT NOT NULL DEFAULT '',
  usage_json      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(usage_json)),
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
INSERT INTO runs_new (id, agent, workflow, tag, backend, plugin_sha256, attempt, state,
                      started_at, ended_at, inbox_until_seq, error, usage_json)
SELECT id, agent, workflow, tag, backend, plugin_sha256, attempt, state,
       started_at, ended_at, inbox_until_seq, error, usage_json FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_by_agent ON runs (workflow, tag, agent, started_at);
CREATE INDEX runs_by_state ON runs (state) WHERE state IN ('queued', 'running');

CREATE TABLE workflows_new (
  name               TEXT NOT NULL CHECK (name <> ''),
  tag                TEXT NOT NULL CHECK (tag <> ''),
  source_path        TEXT NOT NULL DEFAULT '',
  config_yaml        TEXT NOT NULL DEFAULT '',
  state              TEXT NOT NULL DEFAULT 'running'
                     CHECK (state IN ('running', 'paused', 'over_budget', 'failed', 'stopped')),
  error              TEXT NOT NULL DEFAULT '',
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL,
  workdir            TEXT NOT NULL DEFAULT '',
  docs_provider      TEXT NOT NULL DEFAULT 'file',
  docs_owner         TEXT NOT NULL DEFAULT '',
  long_message_chars INTEGER NOT NULL DEFAULT 0 CHECK (long_message_chars >= 0),
  params_json        TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(params_json)),
  vars_json          TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(vars_json)),
  docs_dir           TEXT NOT NULL DEFAULT '',
  started_at         INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (name, tag)
);
INSERT INTO workflows_new (name, tag, source_path, config_yaml, state, error, created_at, updated_at, workdir,
                           docs_provider, docs_owner, long_message_chars, params_json, vars_json, docs_dir, started_at)
SELECT name, tag, source_path, config_yaml, state, error, created_at, updated_at, workdir,
       docs_provider, docs_owner, long_message_chars, params_json, vars_json, docs_dir, started_at FROM workflows;
DROP TABLE workflows;
ALTER TABLE workflows_new RENAME TO workflows;
