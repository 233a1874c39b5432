-- The daemon that moved an agent to running, so the take-back of a dead
-- member also frees an agent it held between the move and its run's
-- record (or between the run's end and the move back to idle).
ALTER TABLE agents ADD COLUMN daemon TEXT NOT NULL DEFAULT '';
