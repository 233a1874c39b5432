-- 0006_workflow_started: when a workflow was last started (not reloaded),
-- so a run's summary counts only that start's runs.
ALTER TABLE workflows ADD COLUMN started_at INTEGER NOT NULL DEFAULT 0;
