-- SQLite's 0030_workspace_repos: several repositories (workspace.repos,
-- issue 45). A workflow's named repositories as the daemon resolved them
-- when it loaded the file; '[]' for none. A merge-queue entry belongs to
-- one repository's queue: '' is the workflow's own.
ALTER TABLE workflows ADD COLUMN workspace_repos_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE merge_queue ADD COLUMN repo TEXT NOT NULL DEFAULT '';
DROP INDEX merge_queue_by_queue;
CREATE INDEX merge_queue_by_queue ON merge_queue (workflow, tag, repo, base, state, seq);
