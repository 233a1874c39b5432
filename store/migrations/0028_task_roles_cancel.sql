-- 0028_task_roles_cancel: roles route tasks, a task can be cancelled, a
-- completion keeps its artifacts (issue 45, items 4 and 5).
-- agents.roles is the JSON list of an agent's roles; tasks.role the one
-- role a task asks for ('' for anyone); tasks.artifacts the JSON list of
-- paths task_complete named. The tasks table is rebuilt for its state
-- check, which gains 'cancelled' (SQLite cannot alter a check); rows,
-- ids and indexes are carried over as they were.
ALTER TABLE agents ADD COLUMN roles TEXT NOT NULL DEFAULT '[]';

CREATE TABLE tasks_new (
  id               TEXT PRIMARY KEY,
  n                INTEGER NOT NULL UNIQUE,
  workflow         TEXT NOT NULL,
  tag              TEXT NOT NULL,
  title            TEXT NOT NULL CHECK (title <> ''),
  description      TEXT NOT NULL DEFAULT '',
  priority         INTEGER NOT NULL DEFAULT 0,
  parent           TEXT REFERENCES tasks (id) ON DELETE CASCADE,
  assignee         TEXT NOT NULL DEFAULT '',
  created_by       TEXT NOT NULL,
  state            TEXT NOT NULL DEFAULT 'pending'
                   CHECK (state = 'pending' OR state = 'claimed' OR state = 'in_progress'
                          OR state = 'completed' OR state = 'failed' OR state = 'cancelled'),
  holder           TEXT NOT NULL DEFAULT '',
  holder_run       TEXT NOT NULL DEFAULT '',
  lease_expires_at INTEGER NOT NULL DEFAULT 0,
  percent          INTEGER CHECK (percent IS NULL OR (percent >= 0 AND percent <= 100)),
  result           TEXT NOT NULL DEFAULT '',
  error            TEXT NOT NULL DEFAULT '',
  retries          INTEGER NOT NULL DEFAULT 0 CHECK (retries >= 0),
  max_retries      INTEGER NOT NULL DEFAULT 2 CHECK (max_retries >= 0),
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL,
  role             TEXT NOT NULL DEFAULT '',
  artifacts        TEXT NOT NULL DEFAULT '[]',
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
INSERT INTO tasks_new (id, n, workflow, tag, title, description, priority, parent, assignee, created_by, state,
  holder, holder_run, lease_expires_at, percent, result, error, retries, max_retries, created_at, updated_at)
SELECT id, n, workflow, tag, title, description, priority, parent, assignee, created_by, state,
  holder, holder_run, lease_expires_at, percent, result, error, retries, max_retries, created_at, updated_at FROM tasks;
DROP TABLE tasks;
ALTER TABLE tasks_new RENAME TO tasks;
CREATE INDEX tasks_by_workflow ON tasks (workflow, tag, state);
CREATE INDEX tasks_by_parent ON tasks (parent) WHERE parent IS NOT NULL;
CREATE INDEX tasks_held ON tasks (lease_expires_at) WHERE state = 'claimed' OR state = 'in_progress';
CREATE INDEX tasks_by_holder_run ON tasks (holder_run) WHERE holder_run <> '';
