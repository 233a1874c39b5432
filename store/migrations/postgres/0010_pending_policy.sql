-- 0010_pending_policy: as SQLite's 0025. An edit of a workflow's file that
-- widens what its runs may do waits for the owner to accept it:
-- pending_yaml is that version ('' when none waits), pending_reasons the
-- JSON list of how it widens the policy, pending_at when it was found (ms).
ALTER TABLE workflows ADD COLUMN pending_yaml TEXT NOT NULL DEFAULT '';
ALTER TABLE workflows ADD COLUMN pending_reasons TEXT NOT NULL DEFAULT '[]';
ALTER TABLE workflows ADD COLUMN pending_at BIGINT NOT NULL DEFAULT 0;
