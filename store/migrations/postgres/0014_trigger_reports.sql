-- SQLite's 0028_trigger_reports: webhook triggers by provider (issue 45): how a
-- delivery is checked and which events it takes, and the report each
-- posts back when the team it started goes idle; the reports armed by a
-- delivery and not yet posted; and how an outbox delivery authenticates
-- ('' signs the body for a notify: webhook; gitlab and github send the
-- API token of secret_env).
ALTER TABLE triggers ADD COLUMN provider TEXT NOT NULL DEFAULT 'hmac';
ALTER TABLE triggers ADD COLUMN events_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE triggers ADD COLUMN report_json TEXT NOT NULL DEFAULT '';
ALTER TABLE notify_deliveries ADD COLUMN auth TEXT NOT NULL DEFAULT '';

-- One row per delivery whose trigger reports, until the team goes idle
-- and the report moves into the outbox, in one transaction.
CREATE TABLE trigger_reports (
  id          TEXT PRIMARY KEY CHECK (id <> ''),
  workflow    TEXT NOT NULL,
  tag         TEXT NOT NULL,
  trigger     TEXT NOT NULL,
  delivery_id TEXT NOT NULL,
  seq         BIGINT NOT NULL,
  report_json TEXT NOT NULL,
  created_at  BIGINT NOT NULL,
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);
CREATE INDEX trigger_reports_scope ON trigger_reports (workflow, tag, created_at);
