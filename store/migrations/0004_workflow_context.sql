-- 0004_workflow_context: what a workflow's `context:` section decides, kept
-- in columns the daemon reads on every document write and long message.
ALTER TABLE workflows ADD COLUMN workdir TEXT NOT NULL DEFAULT '';
ALTER TABLE workflows ADD COLUMN docs_provider TEXT NOT NULL DEFAULT 'file';
ALTER TABLE workflows ADD COLUMN docs_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE workflows ADD COLUMN long_message_chars INTEGER NOT NULL DEFAULT 0
  CHECK (long_message_chars >= 0);
