-- Cluster mode (SQLite's 0016_cluster): the daemons that share this
-- store, each run's and each plugin process's daemon, the daemon that
-- watches a workflow's file, and the settings the daemons share.
CREATE TABLE daemons (
  id           TEXT PRIMARY KEY,
  host         TEXT NOT NULL,
  pid          BIGINT NOT NULL,
  address      TEXT NOT NULL DEFAULT '',
  version      TEXT NOT NULL DEFAULT '',
  started_at   BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL,
  stopped_at   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX daemons_by_heartbeat ON daemons (heartbeat_at);
ALTER TABLE runs ADD COLUMN daemon TEXT NOT NULL DEFAULT '';
ALTER TABLE workers ADD COLUMN daemon TEXT NOT NULL DEFAULT '';
ALTER TABLE workflows ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE TABLE cluster_settings (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
