-- 0002_agent_status: what an agent says it is doing (my_status_set), kept
-- apart from agents.state, which only the daemon writes.
ALTER TABLE agents ADD COLUMN status TEXT NOT NULL DEFAULT '';
