-- 0013_tasks: the task board of each workflow:tag (issue 16, part 1).
-- A task is pending → claimed → in_progress → completed | failed. While it
-- is claimed or in progress it has a holder (an agent), the run that holds
-- its lease ('' for an outside agent, which has no run) and the lease's
-- expiry; the run's end or the expiry sends it back to pending. Ids are
-- task-N from the counters table (0003), never reused; n is N, for order.
-- States are checked with comparisons, not IN (see 0012).
CREATE TABLE tasks (
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
                          OR state = 'completed' OR state = 'failed'),
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
) WITHOUT ROWID;
CREATE INDEX task_deps_by_dep ON task_deps (dep_id, task_id);

-- A task's history: every state change and progress note, oldest first
-- (by rowid). state is the task's state after the event; percent is set
-- by progress notes that give one.
CREATE TABLE task_events (
  task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  at      INTEGER NOT NULL,
  actor   TEXT NOT NULL,
  kind    TEXT NOT NULL,
  state   TEXT NOT NULL,
  note    TEXT NOT NULL DEFAULT '',
  percent INTEGER
);
CREATE INDEX task_events_by_task ON task_events (task_id);
