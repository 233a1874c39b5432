-- What agents asked the owner (ask_user) and, later, the actions they wait
-- to have approved: pending until someone answers, the answer and who
-- gave it recorded.
CREATE TABLE questions (
  id           TEXT PRIMARY KEY,
  workflow     TEXT NOT NULL,
  tag          TEXT NOT NULL,
  agent        TEXT NOT NULL,
  kind         TEXT NOT NULL DEFAULT 'question' CHECK (kind IN ('question', 'approval')),
  question     TEXT NOT NULL,
  options_json TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(options_json)),
  context      TEXT NOT NULL DEFAULT '',
  run_id       TEXT NOT NULL DEFAULT '',
  state        TEXT NOT NULL DEFAULT 'pending'
               CHECK (state IN ('pending', 'answered', 'expired', 'cancelled', 'approved', 'denied')),
  answer       TEXT NOT NULL DEFAULT '',
  answered_by  TEXT NOT NULL DEFAULT '',
  answered_at  INTEGER NOT NULL DEFAULT 0,
  created_at   INTEGER NOT NULL,
  FOREIGN KEY (workflow, tag, agent) REFERENCES agents (workflow, tag, name) ON DELETE CASCADE
);
CREATE INDEX questions_by_state ON questions (state, created_at);
CREATE INDEX questions_by_agent ON questions (workflow, tag, agent);
