-- Budgets: what a workflow:tag (agent '') or one of its agents may spend
-- since the workflow (re)started. NULL limits are unset.
CREATE TABLE budgets (
  workflow   TEXT NOT NULL,
  tag        TEXT NOT NULL,
  agent      TEXT NOT NULL DEFAULT '',
  usd        REAL CHECK (usd IS NULL OR usd >= 0),
  tokens     INTEGER CHECK (tokens IS NULL OR tokens >= 0),
  runs       INTEGER CHECK (runs IS NULL OR runs >= 0),
  hard       INTEGER NOT NULL DEFAULT 0 CHECK (hard IN (0, 1)),
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (workflow, tag, agent),
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
