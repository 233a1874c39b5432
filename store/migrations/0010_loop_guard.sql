-- The loop guard: how many agent messages in a row pause a workflow
-- (0: off; workflows started from a file get the file's value, default
-- 30), and the length of the current run of agent messages, kept with
-- every message write so the check costs no query.
ALTER TABLE workflows ADD COLUMN loop_guard INTEGER NOT NULL DEFAULT 0 CHECK (loop_guard >= 0);
ALTER TABLE workflows ADD COLUMN agent_streak INTEGER NOT NULL DEFAULT 0;
