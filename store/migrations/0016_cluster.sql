-- Cluster mode: the daemons that share this store, each run's and each
-- plugin process's daemon, and the daemon that watches a workflow's file.
-- On the embedded SQLite file there is one daemon at a time; the columns
-- are filled all the same, so a run says which daemon process ran it.
CREATE TABLE daemons (
  id           TEXT PRIMARY KEY,
  host         TEXT NOT NULL,
  pid          INTEGER NOT NULL,
  address      TEXT NOT NULL DEFAULT '',
  version      TEXT NOT NULL DEFAULT '',
  started_at   INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  stopped_at   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX daemons_by_heartbeat ON daemons (heartbeat_at);
ALTER TABLE runs ADD COLUMN daemon TEXT NOT NULL DEFAULT '';
ALTER TABLE workers ADD COLUMN daemon TEXT NOT NULL DEFAULT '';
ALTER TABLE workflows ADD COLUMN owner TEXT NOT NULL DEFAULT '';
-- Settings the daemons of a cluster share (the API token).
CREATE TABLE cluster_settings (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
