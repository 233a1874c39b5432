-- SQLite's 0019_notify: notifications out (issue 28, item 4). notify_subscriptions
-- holds each workflow:tag's notify: list as its last good config defines
-- it; notify_deliveries is the outbox: one row per event and webhook,
-- pending until a POST to it is answered 2xx (delivered) or a day of
-- retries has passed (failed). The secret is never stored, only the name
-- of the daemon's environment variable that holds it.
CREATE TABLE notify_subscriptions (
  workflow    TEXT NOT NULL,
  tag         TEXT NOT NULL,
  idx         INTEGER NOT NULL,
  url         TEXT NOT NULL CHECK (url <> ''),
  events_json TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(events_json)),
  secret_env  TEXT NOT NULL DEFAULT '',
  line        INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workflow, tag, idx),
  FOREIGN KEY (workflow, tag) REFERENCES workflows (name, tag) ON DELETE CASCADE
);

-- Not tied to workflows: a delivery outlives the workflow it is about,
-- and the daemon-wide subscriptions have none.
CREATE TABLE notify_deliveries (
  id           TEXT PRIMARY KEY,
  event        TEXT NOT NULL,
  workflow     TEXT NOT NULL DEFAULT '',
  tag          TEXT NOT NULL DEFAULT '',
  url          TEXT NOT NULL,
  body         TEXT NOT NULL,
  secret_env   TEXT NOT NULL DEFAULT '',
  state        TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts     INTEGER NOT NULL DEFAULT 0,
  next_at      BIGINT NOT NULL,
  -- A member sending it holds it until lease_until: no other sends it
  -- meanwhile; one that died lets it go when the lease ends.
  claimed_by   TEXT NOT NULL DEFAULT '',
  lease_until  BIGINT NOT NULL DEFAULT 0,
  last_error   TEXT NOT NULL DEFAULT '',
  last_status  INTEGER NOT NULL DEFAULT 0,
  delivered_at BIGINT NOT NULL DEFAULT 0,
  created_at   BIGINT NOT NULL
);
CREATE INDEX notify_deliveries_due ON notify_deliveries (state, next_at);
CREATE INDEX notify_deliveries_created ON notify_deliveries (created_at);
