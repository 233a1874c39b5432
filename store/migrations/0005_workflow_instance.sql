-- 0005_workflow_instance: what a started workflow needs to be resolved again
-- (after an edit or a daemon restart) without re-running its setup: the
-- parameters it was started with, the setup results, and where its
-- documents live when the file names a directory for them.
ALTER TABLE workflows ADD COLUMN params_json TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(params_json));
ALTER TABLE workflows ADD COLUMN vars_json TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(vars_json));
ALTER TABLE workflows ADD COLUMN docs_dir TEXT NOT NULL DEFAULT '';
