-- Planners: an agent with can_spawn may start up to max_spawned agents of
-- its own workflow:tag at once (agent_spawn); spawned_by names the agent
-- that spawned this one ('' for agents of the file or the CLI).
ALTER TABLE agents ADD COLUMN can_spawn INTEGER NOT NULL DEFAULT 0 CHECK (can_spawn IN (0, 1));
ALTER TABLE agents ADD COLUMN max_spawned INTEGER NOT NULL DEFAULT 0 CHECK (max_spawned >= 0);
ALTER TABLE agents ADD COLUMN spawned_by TEXT NOT NULL DEFAULT '';
