-- The daemon that moved an agent to running (SQLite's 0017_agent_member).
ALTER TABLE agents ADD COLUMN daemon TEXT NOT NULL DEFAULT '';
