package store

import (
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// AgentKey addresses one agent: names are unique only within a
// workflow:tag, so every lookup needs all three parts.
type AgentKey struct {
	Name, Workflow, Tag string
}

// String formats the key as users write it, "name@workflow:tag", so that
// messages and logs name agents the same way the CLI does.
func (k AgentKey) String() string { return k.Name + "@" + k.Workflow + ":" + k.Tag }

// Agent is the stored definition and live state of one agent.
type Agent struct {
	Name, Workflow, Tag    string
	Backend, Model, System string
	Schedule, WakeupPrompt string
	// Config is the agent's backend configuration; the store keeps it as
	// JSON in config_json and reads it back typed.
	Config backend.AgentConfig
	// State is empty on create, which means idle.
	State contract.AgentState
	// Status is what the agent says it is doing (my_status_set), such as
	// "working" or "blocked"; the agent owns it, the daemon never sets it.
	Status string
	Task   string
	// Error explains the last failure, so that status can show why an agent
	// is failed without digging through logs.
	Error string
	// CanSpawn lets the agent spawn up to MaxSpawned live agents of its
	// workflow:tag (agent_spawn) and stop them (agent_stop). SpawnedBy
	// names the agent that spawned this one; "" for agents of a workflow
	// file or the CLI.
	CanSpawn   bool
	MaxSpawned int
	SpawnedBy  string
	// Roles route tasks: a task with a role goes only to an agent that
	// has it (issue 45). Stored as a JSON list, sorted, without repeats.
	Roles                []string
	CreatedAt, UpdatedAt time.Time
}

// Key returns the agent's address.
func (a Agent) Key() AgentKey { return AgentKey{Name: a.Name, Workflow: a.Workflow, Tag: a.Tag} }

// AgentFilter narrows ListAgents; an empty field matches any value.
type AgentFilter struct {
	Workflow, Tag string
}

const agentColumns = `name, workflow, tag, backend, model, system, schedule, wakeup_prompt,
	config_json, state, status, task, error, created_at, updated_at, can_spawn, max_spawned, spawned_by, roles`

func scanAgent(s row) (Agent, error) {
	a := Agent{
		Name: s.ColumnText(0), Workflow: s.ColumnText(1), Tag: s.ColumnText(2),
		Backend: s.ColumnText(3), Model: s.ColumnText(4), System: s.ColumnText(5),
		Schedule: s.ColumnText(6), WakeupPrompt: s.ColumnText(7),
		Status: s.ColumnText(10), Task: s.ColumnText(11), Error: s.ColumnText(12),
		CreatedAt: fromMs(s.ColumnInt64(13)), UpdatedAt: fromMs(s.ColumnInt64(14)),
		CanSpawn: s.ColumnBool(15), MaxSpawned: s.ColumnInt(16), SpawnedBy: s.ColumnText(17),
	}
	state, err := contract.ParseAgentState(s.ColumnText(9))
	if err != nil {
		return a, contract.Errorf(contract.CodeInternal, "agent %q in the database: %w", a.Key(), err)
	}
	a.State = state
	if a.Roles, err = parseRoles(s.ColumnText(18)); err != nil {
		return a, contract.Errorf(contract.CodeInternal, "agent %q has stored roles the daemon cannot read: %w", a.Key(), err)
	}
	cfg, err := backend.ParseAgentConfig([]byte(s.ColumnText(8)))
	if err != nil {
		return a, contract.Errorf(contract.CodeInternal, "agent %q has a stored config the daemon cannot read (%w): remove the agent and create it again", a.Key(), err)
	}
	a.Config = cfg
	return a, nil
}

// CreateAgent stores a new agent and returns it as stored (defaults filled,
// timestamps set). Its workflow is created, running, if it does not exist
// yet, so that defining an agent is enough to start using a workflow:tag.
func (db *DB) CreateAgent(ctx context.Context, a Agent) (Agent, error) {
	defer db.configChanged()
	if a.Name == "" || a.Workflow == "" || a.Tag == "" {
		return Agent{}, contract.Errorf(contract.CodeInvalid, "agent %q: name, workflow and tag are required", a.Key())
	}
	if a.State == "" {
		a.State = contract.AgentIdle
	}
	if !a.State.Valid() {
		return Agent{}, contract.Errorf(contract.CodeInvalid, "agent %q: unknown state %q", a.Key(), a.State)
	}
	config, err := json.Marshal(a.Config)
	if err != nil {
		return Agent{}, contract.Errorf(contract.CodeInvalid, "agent %q: %w", a.Key(), err)
	}
	if a.Roles, err = tools.CleanRoles(a.Roles); err != nil {
		return Agent{}, contract.Errorf(contract.CodeInvalid, "agent %q: roles: %w", a.Key(), err)
	}
	var stored Agent
	err = db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		err := conn.execute(`INSERT INTO workflows (name, tag, state, created_at, updated_at)
			VALUES (?, ?, 'running', ?, ?) ON CONFLICT DO NOTHING`,
			&execOptions{Args: []any{a.Workflow, a.Tag, now, now}})
		if err != nil {
			return err
		}
		if err := insertAgent(conn, a, string(config), now); err != nil {
			return err
		}
		stored, err = getAgent(conn, a.Key())
		return err
	})
	return stored, err
}

func insertAgent(conn querier, a Agent, config string, now int64) error {
	err := conn.execute(`INSERT INTO agents (`+agentColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		&execOptions{Args: []any{a.Name, a.Workflow, a.Tag, a.Backend, a.Model, a.System,
			a.Schedule, a.WakeupPrompt, config, a.State, a.Status, a.Task, a.Error, now, now,
			a.CanSpawn, a.MaxSpawned, a.SpawnedBy, rolesJSON(a.Roles)}})
	if isConflict(err) {
		return contract.Errorf(contract.CodeConflict, "agent %q already exists: pick another name", a.Key())
	}
	return err
}

// SpawnAgent stores a, spawned by its workflow's agent a.SpawnedBy, in the
// same transaction that checks the spawner may (can_spawn, still in the
// workflow), that the name is free and that the spawner has fewer than its
// max_spawned live (not stopped) agents, so two spawns at once cannot pass
// the limit together. It returns the agent as stored and how many live
// agents the spawner has now, this one included.
func (db *DB) SpawnAgent(ctx context.Context, a Agent) (Agent, int, error) {
	defer db.configChanged()
	if a.State == "" {
		a.State = contract.AgentIdle
	}
	config, err := json.Marshal(a.Config)
	if err != nil {
		return Agent{}, 0, contract.Errorf(contract.CodeInvalid, "agent %q: %w", a.Key(), err)
	}
	if a.Roles, err = tools.CleanRoles(a.Roles); err != nil {
		return Agent{}, 0, contract.Errorf(contract.CodeInvalid, "agent %q: roles: %w", a.Key(), err)
	}
	var stored Agent
	var live int
	err = db.write(ctx, func(conn querier) error {
		parent, err := getAgent(conn, AgentKey{Name: a.SpawnedBy, Workflow: a.Workflow, Tag: a.Tag})
		if err != nil {
			return err
		}
		if !parent.CanSpawn {
			return contract.Errorf(contract.CodePermission, "%s may not spawn agents: give it can_spawn: true in the workflow file", parent.Name)
		}
		if _, err := getAgent(conn, a.Key()); err == nil {
			return contract.Errorf(contract.CodeConflict, "agent %q already exists: pick another name", a.Key())
		}
		if live, err = countLiveSpawned(conn, parent.Key()); err != nil {
			return err
		}
		if live >= parent.MaxSpawned {
			return contract.Errorf(contract.CodeConflict, "%s already has %d live spawned agent(s), its max_spawned: stop one with agent_stop first", parent.Name, live)
		}
		if err := insertAgent(conn, a, string(config), db.nowMs()); err != nil {
			return err
		}
		live++
		stored, err = getAgent(conn, a.Key())
		return err
	})
	return stored, live, err
}

func countLiveSpawned(conn querier, parent AgentKey) (int, error) {
	n := 0
	err := conn.execute(`SELECT count(*) FROM agents WHERE workflow = ? AND tag = ? AND spawned_by = ? AND state != 'stopped'`,
		&execOptions{Args: []any{parent.Workflow, parent.Tag, parent.Name}, ResultFunc: func(st row) error {
			n = st.ColumnInt(0)
			return nil
		}})
	return n, err
}

// GetAgent returns one agent, or a contract.CodeNotFound error.
func (db *DB) GetAgent(ctx context.Context, k AgentKey) (Agent, error) {
	var a Agent
	err := db.read(ctx, func(conn querier) (err error) {
		a, err = getAgent(conn, k)
		return err
	})
	return a, err
}

func getAgent(conn querier, k AgentKey) (a Agent, err error) {
	found := false
	err = conn.execute(`SELECT `+agentColumns+` FROM agents WHERE workflow = ? AND tag = ? AND name = ?`,
		&execOptions{Args: []any{k.Workflow, k.Tag, k.Name}, ResultFunc: func(s row) error {
			found = true
			a, err = scanAgent(s)
			return err
		}})
	if err == nil && !found {
		err = contract.Errorf(contract.CodeNotFound, "agent %q not found", k)
	}
	return a, err
}

// ListAgents returns the agents that match f, ordered by workflow, tag and
// name so that listings are stable.
func (db *DB) ListAgents(ctx context.Context, f AgentFilter) ([]Agent, error) {
	var as []Agent
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT `+agentColumns+` FROM agents
			WHERE (?1 = '' OR workflow = ?1) AND (?2 = '' OR tag = ?2)
			ORDER BY workflow, tag, name`,
			&execOptions{Args: []any{f.Workflow, f.Tag}, ResultFunc: func(s row) error {
				a, err := scanAgent(s)
				as = append(as, a)
				return err
			}})
	})
	return as, err
}

// SetAgentState records a state change and the error that caused it (""
// to clear it), which is how the scheduler reports progress and failures.
// Stopping an agent also revokes, in the same transaction, every token
// minted for it outside a run (mcp-config), so a stopped workflow's agents
// cannot keep acting; a run in flight keeps its own token until it ends.
func (db *DB) SetAgentState(ctx context.Context, k AgentKey, state contract.AgentState, errMsg string) error {
	if !state.Valid() {
		return contract.Errorf(contract.CodeInvalid, "agent %q: unknown state %q", k, state)
	}
	if state == contract.AgentStopped {
		defer db.tokens.forget()
	}
	return db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		err := conn.execute(`UPDATE agents SET state = ?, error = ?, updated_at = ?
			WHERE workflow = ? AND tag = ? AND name = ?`,
			&execOptions{Args: []any{state, errMsg, now, k.Workflow, k.Tag, k.Name}})
		if err == nil && conn.changes() == 0 {
			return contract.Errorf(contract.CodeNotFound, "agent %q not found", k)
		}
		if err != nil || state != contract.AgentStopped {
			return err
		}
		return conn.execute(`UPDATE agent_tokens SET revoked_at = ? WHERE revoked_at = 0 AND run_id = ''
			AND workflow = ? AND tag = ? AND agent = ?`,
			&execOptions{Args: []any{now, k.Workflow, k.Tag, k.Name}})
	})
}

// maxStatusChars bounds an agent's self-reported status and task: they are
// shown in one-line listings and to every teammate, not used as notes.
const maxStatusChars = 200

// SetAgentStatus records what an agent says about itself (my_status_set).
// A nil status or task is left as it is, so an agent can update one without
// knowing the other.
func (db *DB) SetAgentStatus(ctx context.Context, k AgentKey, status, task *string) error {
	for _, f := range []struct {
		name string
		v    *string
	}{{"status", status}, {"task", task}} {
		if f.v != nil && utf8.RuneCountInString(*f.v) > maxStatusChars {
			return contract.Errorf(contract.CodeInvalid, "agent %q: %s is longer than %d characters; keep it to one short line", k, f.name, maxStatusChars)
		}
	}
	return db.write(ctx, func(conn querier) error {
		err := conn.execute(`UPDATE agents SET status = coalesce(?, status), task = coalesce(?, task),
			updated_at = ? WHERE workflow = ? AND tag = ? AND name = ?`,
			&execOptions{Args: []any{nullable(status), nullable(task), db.nowMs(), k.Workflow, k.Tag, k.Name}})
		if err == nil && conn.changes() == 0 {
			err = contract.Errorf(contract.CodeNotFound, "agent %q not found", k)
		}
		return err
	})
}

// nullable binds a nil pointer as SQL NULL.
func nullable(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// DeleteAgent removes an agent together with its inbox cursor, inbox
// entries, sessions and tokens (by foreign-key cascade), so that a new agent
// of the same name starts clean. Its runs stay as history.
func (db *DB) DeleteAgent(ctx context.Context, k AgentKey) error {
	defer db.configChanged()
	defer db.tokens.forget()
	return db.write(ctx, func(conn querier) error {
		err := conn.execute(`DELETE FROM agents WHERE workflow = ? AND tag = ? AND name = ?`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name}})
		if err == nil && conn.changes() == 0 {
			err = contract.Errorf(contract.CodeNotFound, "agent %q not found", k)
		}
		return err
	})
}

// ResetRunningAgents is called once at daemon start-up: no run survives the
// daemon, so agents still marked running belong to a dead process and go
// back to idle, where the scheduler picks them up again. It returns how
// many were reset.
//
// In a cluster it does nothing: other daemons' agents are running for
// real, and those of a dead daemon go back with RecoverDeadDaemons.
func (db *DB) ResetRunningAgents(ctx context.Context) (int, error) {
	if db.Cluster() {
		return 0, nil
	}
	n := 0
	err := db.write(ctx, func(conn querier) error {
		err := conn.execute(`UPDATE agents SET state = 'idle', updated_at = ? WHERE state = 'running'`,
			&execOptions{Args: []any{db.nowMs()}})
		n = conn.changes()
		return err
	})
	return n, err
}

// inboxDepthSQL counts an agent's unread inbox entries with a range scan of
// the message_recipients primary key; the first column says whether the
// agent exists, so that one statement gives a consistent answer.
const inboxDepthSQL = `SELECT
	EXISTS (SELECT 1 FROM agents WHERE workflow = ?1 AND tag = ?2 AND name = ?3),
	(SELECT count(*) FROM message_recipients
	 WHERE workflow = ?1 AND tag = ?2 AND agent = ?3
	   AND seq > coalesce((SELECT cursor FROM inbox_ack WHERE workflow = ?1 AND tag = ?2 AND agent = ?3), 0))`

// InboxDepth returns how many messages wait in an agent's inbox (past its
// ack cursor), which the scheduler uses to decide whether to wake it.
func (db *DB) InboxDepth(ctx context.Context, k AgentKey) (int, error) {
	n := 0
	err := db.read(ctx, func(conn querier) error {
		exists := false
		err := conn.execute(inboxDepthSQL, &execOptions{
			Args: []any{k.Workflow, k.Tag, k.Name},
			ResultFunc: func(s row) error {
				exists, n = s.ColumnBool(0), s.ColumnInt(1)
				return nil
			}})
		if err == nil && !exists {
			err = contract.Errorf(contract.CodeNotFound, "agent %q not found", k)
		}
		return err
	})
	return n, err
}

// InboxDepths returns how many messages wait in each agent's inbox, every
// agent in one statement (agents with none included), for the daemon's
// inbox-depth metric, which reads them all at every scrape.
func (db *DB) InboxDepths(ctx context.Context) (map[AgentKey]int, error) {
	out := map[AgentKey]int{}
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT a.workflow, a.tag, a.name,
			(SELECT count(*) FROM message_recipients AS r
			 WHERE r.workflow = a.workflow AND r.tag = a.tag AND r.agent = a.name
			   AND r.seq > coalesce((SELECT cursor FROM inbox_ack AS k
			                         WHERE k.workflow = a.workflow AND k.tag = a.tag AND k.agent = a.name), 0))
			FROM agents AS a`,
			&execOptions{ResultFunc: func(s row) error {
				out[AgentKey{Workflow: s.ColumnText(0), Tag: s.ColumnText(1), Name: s.ColumnText(2)}] = s.ColumnInt(3)
				return nil
			}})
	})
	return out, err
}

// SetAgentSchedule replaces an agent's schedule and wake-up prompt (both
// empty clears them).
func (db *DB) SetAgentSchedule(ctx context.Context, k AgentKey, schedule, prompt string) error {
	defer db.configChanged()
	return db.write(ctx, func(conn querier) error {
		err := conn.execute(`UPDATE agents SET schedule = ?, wakeup_prompt = ?, updated_at = ?
			WHERE workflow = ? AND tag = ? AND name = ?`,
			&execOptions{Args: []any{schedule, prompt, db.nowMs(), k.Workflow, k.Tag, k.Name}})
		if err != nil {
			return err
		}
		if conn.changes() == 0 {
			return contract.Errorf(contract.CodeNotFound, "agent %q not found", k)
		}
		return nil
	})
}

// LastActivity is when the agent last finished a run, or when it was
// created if it never ran: interval schedules count idle time from it, so
// schedules survive a daemon restart without state of their own.
func (db *DB) LastActivity(ctx context.Context, k AgentKey) (time.Time, error) {
	var ms int64
	err := db.read(ctx, func(conn querier) error {
		found := false
		err := conn.execute(`SELECT created_at, coalesce((SELECT max(ended_at) FROM runs
			WHERE workflow = ?1 AND tag = ?2 AND agent = ?3), 0) FROM agents WHERE workflow = ?1 AND tag = ?2 AND name = ?3`,
			&execOptions{Args: []any{k.Workflow, k.Tag, k.Name}, ResultFunc: func(s row) error {
				ms, found = max(s.ColumnInt64(0), s.ColumnInt64(1)), true
				return nil
			}})
		if err == nil && !found {
			err = contract.Errorf(contract.CodeNotFound, "agent %q not found", k)
		}
		return err
	})
	return fromMs(ms), err
}

// UpdateAgent replaces an agent's definition (backend, model, prompt,
// schedule, config) and state, keeping its inbox and history: how an edited
// workflow changes an agent from its next run.
func (db *DB) UpdateAgent(ctx context.Context, a Agent) error {
	defer db.configChanged()
	config, err := json.Marshal(a.Config)
	if err != nil {
		return contract.Errorf(contract.CodeInvalid, "agent %q: %w", a.Key(), err)
	}
	if a.Roles, err = tools.CleanRoles(a.Roles); err != nil {
		return contract.Errorf(contract.CodeInvalid, "agent %q: roles: %w", a.Key(), err)
	}
	if a.State == "" {
		a.State = contract.AgentIdle
	}
	return db.write(ctx, func(conn querier) error {
		err := conn.execute(`UPDATE agents SET backend = ?, model = ?, system = ?, schedule = ?, wakeup_prompt = ?,
			config_json = ?, state = ?, error = ?, can_spawn = ?, max_spawned = ?, roles = ?, updated_at = ?
			WHERE workflow = ? AND tag = ? AND name = ?`,
			&execOptions{Args: []any{a.Backend, a.Model, a.System, a.Schedule, a.WakeupPrompt, string(config),
				a.State, a.Error, a.CanSpawn, a.MaxSpawned, rolesJSON(a.Roles), db.nowMs(), a.Workflow, a.Tag, a.Name}})
		if err == nil && conn.changes() == 0 {
			err = contract.Errorf(contract.CodeNotFound, "agent %q not found", a.Key())
		}
		return err
	})
}

// rolesJSON is roles as the agents table keeps them: a JSON list, "[]"
// for none.
func rolesJSON(roles []string) string {
	if len(roles) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(roles) // a []string always marshals
	return string(b)
}

// parseRoles reads the agents table's roles (a task's artifacts too: both
// are JSON lists of strings).
func parseRoles(s string) ([]string, error) {
	if s == "" || s == "[]" {
		return nil, nil
	}
	var out []string
	err := json.Unmarshal([]byte(s), &out)
	return out, err
}
