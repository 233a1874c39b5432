-- 0008_triggers: webhook triggers of each workflow:tag, as its last good
-- config defines them (message with every variable but ${{ body.X }} filled
-- in), and the delivery ids seen in the last 24 hours, so a webhook sent
-- twice posts once.
CREATE TABLE triggers (
  workflow   TEXT NOT NULL,
  tag        TEXT NOT NULL,
  name       TEXT NOT NULL CHECK (name <> ''),
  secret_env TEXT NOT NULL CHECK (secret_env <> ''),
  message    TEXT NOT NULL,
  line       INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workflow, tag, name),
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
) WITHOUT ROWID;

-- Not tied to triggers: a reload that rewrites a trigger keeps its ids.
CREATE TABLE webhook_deliveries (
  workflow    TEXT NOT NULL,
  tag         TEXT NOT NULL,
  trigger     TEXT NOT NULL,
  delivery_id TEXT NOT NULL CHECK (delivery_id <> ''),
  seq         INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  PRIMARY KEY (workflow, tag, trigger, delivery_id),
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);
