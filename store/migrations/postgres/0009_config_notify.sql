-- PostgreSQL only (SQLite has no other member to tell). Every statement
-- that adds, removes or redefines agents or workflows notifies the
-- cluster's members (LISTEN agent_worker_events, host/cluster) when its
-- transaction commits, so that a member may keep teams and agents'
-- definitions in memory as a single daemon does, and forget them when
-- any member, or anyone with SQL, changes them. The columns an agent's
-- run or a message moves (state, task, status, error, updated_at, daemon;
-- a workflow's state, error, agent_streak, owner) are left out: they
-- change all the time and nothing kept depends on them. One statement's
-- notifications are one (PostgreSQL folds equal payloads of a transaction).
CREATE FUNCTION agent_worker_config_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('agent_worker_events', '{"c":true}');
  RETURN NULL;
END
$$;

CREATE TRIGGER agents_config_changed
  AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF name, workflow, tag, backend, model, system, schedule, wakeup_prompt,
    config_json, can_spawn, max_spawned, spawned_by
  ON agents FOR EACH STATEMENT EXECUTE FUNCTION agent_worker_config_changed();

CREATE TRIGGER workflows_config_changed
  AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF name, tag, source_path, config_yaml, workdir, docs_provider, docs_owner,
    long_message_chars, params_json, vars_json, docs_dir, loop_guard, workspace_repo, workspace_base
  ON workflows FOR EACH STATEMENT EXECUTE FUNCTION agent_worker_config_changed();
