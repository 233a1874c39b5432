-- 0025_pending_policy: an edit of a workflow's file that widens what its
-- runs may do (issue 40) waits for the owner to accept it. pending_yaml is
-- that version of the file ('' when none waits), pending_reasons the JSON
-- list of how it widens the policy, and pending_at when it was found (ms).
-- The config that runs stays config_yaml until `workflows accept`.
ALTER TABLE workflows ADD COLUMN pending_yaml TEXT NOT NULL DEFAULT '';
ALTER TABLE workflows ADD COLUMN pending_reasons TEXT NOT NULL DEFAULT '[]';
ALTER TABLE workflows ADD COLUMN pending_at INTEGER NOT NULL DEFAULT 0;
