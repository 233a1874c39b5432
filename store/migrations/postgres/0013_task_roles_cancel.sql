-- 0013_task_roles_cancel: as SQLite's 0028. agents.roles is the JSON list
-- of an agent's roles; tasks.role the role a task asks for ('' for
-- anyone); tasks.artifacts the JSON list of paths task_complete named; a
-- task's state may be 'cancelled'.
ALTER TABLE agents ADD COLUMN roles TEXT NOT NULL DEFAULT '[]';
ALTER TABLE tasks ADD COLUMN role TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN artifacts TEXT NOT NULL DEFAULT '[]';
ALTER TABLE tasks DROP CONSTRAINT tasks_state_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_state_check
  CHECK (state = 'pending' OR state = 'claimed' OR state = 'in_progress'
         OR state = 'completed' OR state = 'failed' OR state = 'cancelled');
