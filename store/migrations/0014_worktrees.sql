-- A git workspace (workspace: {git: worktree}): the top-level directory of
-- the repository the workflow's directory is in, and the branch each
-- agent's worktree starts from, resolved when the workflow loads so that
-- switching branches in the user's checkout later changes nothing. Both
-- are '' for a workflow without one. The worktrees and branches themselves
-- are recorded by git (aw/<workflow>/<tag>/<agent>).
ALTER TABLE workflows ADD COLUMN workspace_repo TEXT NOT NULL DEFAULT '';
ALTER TABLE workflows ADD COLUMN workspace_base TEXT NOT NULL DEFAULT '';
