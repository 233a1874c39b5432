package agents

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// Scheduler is what registering an agent needs of the scheduler.
type Scheduler interface {
	Add(key store.AgentKey)
	Remove(key store.AgentKey)
	Reschedule(key store.AgentKey)
}

// Registry registers standalone agents (POST /agents), removes agents and
// changes their schedules, keeping the store, the scheduler and the MCP
// server's token cache in step.
type Registry struct {
	DB           *store.DB
	Catalog      Catalog
	Sched        Scheduler
	DefaultModel string
	// Forget drops what the MCP server cached about an agent's tokens.
	Forget func(store.AgentKey)
	// StateDir is where an agent's private state lives; removed with it.
	StateDir func(store.AgentKey) string
	// Release tidies the git worktrees of a workflow's removed agents
	// (host/worktrees); nil when there are none to tidy.
	Release func(context.Context, store.Scope)
	Log     hclog.Logger
	// RequireSandbox (--sandbox required) refuses an agent whose sandbox
	// is off.
	RequireSandbox bool
}

// Create validates spec, stores the agent and schedules it.
func (r *Registry) Create(ctx context.Context, spec api.AgentSpec) (store.Agent, error) {
	a, err := FromSpec(spec, r.Catalog, r.DefaultModel)
	if err != nil {
		return store.Agent{}, err
	}
	if r.RequireSandbox && a.Config.Sandbox.Off() {
		return store.Agent{}, api.Errorf(api.CodeInvalid, "agent %s: sandbox mode off is refused: the daemon requires every run confined (--sandbox required): leave mode: off out of --config, or start the daemon with --sandbox auto", a.Name)
	}
	stored, err := r.DB.CreateAgent(ctx, a)
	if err != nil {
		return store.Agent{}, err
	}
	r.Log.Info("agent registered", "agent", stored.Key().String(), "backend", stored.Backend)
	r.Sched.Add(stored.Key())
	return stored, nil
}

// Delete removes an agent with its tokens, its run in flight and its
// private state.
func (r *Registry) Delete(ctx context.Context, key store.AgentKey) error {
	if err := r.DB.DeleteAgent(ctx, key); err != nil {
		return err
	}
	r.Forget(key) // its tokens went with it
	r.Sched.Remove(key)
	if err := os.RemoveAll(r.StateDir(key)); err != nil {
		r.Log.Warn("remove agent state", "agent", key.String(), "error", err)
	}
	if r.Release != nil {
		r.Release(ctx, key.Scope())
	}
	r.Log.Info("agent removed", "agent", key.String())
	return nil
}

// SetSchedule sets (or, with "", clears) an agent's schedule and makes the
// scheduler read it again.
func (r *Registry) SetSchedule(ctx context.Context, key store.AgentKey, schedule, prompt string) error {
	if err := ValidateSchedule(schedule); err != nil {
		return err
	}
	if err := r.DB.SetAgentSchedule(ctx, key, schedule, prompt); err != nil {
		return err
	}
	r.Sched.Reschedule(key)
	return nil
}

// Spawn creates agent name for parent in parent's workflow:tag: on
// parent's backend unless backend is given, with parent's model when the
// backend is the same. The store checks can_spawn, the name and
// max_spawned in the transaction that inserts it. It returns the agent,
// how many of parent's spawned agents are live and parent's max_spawned.
func (r *Registry) Spawn(ctx context.Context, parent store.AgentKey, name, system, backend, model string, roles []string) (store.Agent, int, int, error) {
	p, err := r.DB.GetAgent(ctx, parent)
	if err != nil {
		return store.Agent{}, 0, 0, err
	}
	if strings.TrimSpace(system) == "" {
		return store.Agent{}, 0, 0, api.Errorf(api.CodeInvalid, "system_prompt is empty: say what the new agent is for")
	}
	spec := api.AgentSpec{Name: name, Workflow: parent.Workflow, Tag: parent.Tag, Backend: backend, Model: model, System: system, Roles: roles}
	if spec.Backend == "" {
		spec.Backend = p.Backend
	}
	if spec.Model == "" && spec.Backend == p.Backend {
		spec.Model = p.Model
	}
	a, err := FromSpec(spec, r.Catalog, r.DefaultModel)
	if err != nil {
		return store.Agent{}, 0, 0, err
	}
	a.Config = spawnedConfig(p.Config, a.Backend == p.Backend)
	if a.Backend != p.Backend {
		if err := r.ownersBackend(ctx, parent.Scope(), a.Backend); err != nil {
			return store.Agent{}, 0, 0, err
		}
	}
	a.SpawnedBy = p.Name
	stored, live, err := r.DB.SpawnAgent(ctx, a)
	if err != nil {
		return store.Agent{}, 0, 0, err
	}
	r.Log.Info("agent spawned", "agent", stored.Key().String(), "by", p.Name, "backend", stored.Backend)
	r.Sched.Add(stored.Key())
	return stored, live, p.MaxSpawned, nil
}

// spawnedConfig is what an agent spawned by a planner of config parent
// may do: never more than its planner, since a run that spawns must not
// widen what runs may do (a planner whose shell commands wait for a
// person would otherwise spawn a helper whose commands do not). It takes
// the planner's sandbox, approvals, limits, tool sets, steps and timeout
// and, on the planner's own backend, its endpoint and the CLI's own
// permissions; never its env (the planner's secrets stay its own) nor
// can_spawn.
func spawnedConfig(parent backend.AgentConfig, sameBackend bool) backend.AgentConfig {
	c := backend.AgentConfig{Sandbox: parent.Sandbox, Approvals: parent.Approvals, Limits: parent.Limits,
		Tools: slices.Clone(parent.Tools), MaxSteps: parent.MaxSteps, Timeout: parent.Timeout}
	if !sameBackend {
		return c
	}
	c.Provider = parent.Provider
	for _, k := range append([]string{"cli"}, workflow.PermissionKeys...) {
		if raw, ok := parent.Extra[k]; ok {
			if c.Extra == nil {
				c.Extra = map[string]json.RawMessage{}
			}
			c.Extra[k] = raw
		}
	}
	return c
}

// ownersBackend refuses a spawn on a backend that no agent the owner
// defined in scope runs on: another backend is another program, with
// permissions of its own, which only the owner may bring in.
func (r *Registry) ownersBackend(ctx context.Context, scope store.Scope, name string) error {
	agents, err := r.DB.ListAgents(ctx, store.AgentFilter{Workflow: scope.Workflow, Tag: scope.Tag})
	if err != nil {
		return err
	}
	var have []string
	for _, a := range agents {
		if a.SpawnedBy == "" {
			if a.Backend == name {
				return nil
			}
			have = append(have, a.Backend)
		}
	}
	slices.Sort(have)
	return api.Errorf(api.CodePermission, "no agent of this workflow runs on backend %s: a spawned agent may use only the backends the workflow's own agents use (%s), so that a run cannot bring in another program. Spawn it on one of those, or add an agent on %s to the workflow file",
		name, strings.Join(slices.Compact(have), ", "), name)
}

// StopSpawned stops an agent that parent spawned: its run in flight is
// cancelled, it starts no new one, and its tokens die. It stays listed,
// stopped, with its history.
func (r *Registry) StopSpawned(ctx context.Context, parent store.AgentKey, name string) (store.Agent, error) {
	key := store.AgentKey{Name: name, Workflow: parent.Workflow, Tag: parent.Tag}
	a, err := r.DB.GetAgent(ctx, key)
	if err != nil {
		return store.Agent{}, err
	}
	if a.SpawnedBy != parent.Name {
		who := "the workflow file or the CLI"
		if a.SpawnedBy != "" {
			who = a.SpawnedBy
		}
		return store.Agent{}, api.Errorf(api.CodePermission, "%s was not spawned by %s but by %s: an agent stops only the agents it spawned", name, parent.Name, who)
	}
	if a.State == api.AgentStopped {
		return a, nil
	}
	if err := r.DB.SetAgentState(ctx, key, api.AgentStopped, ""); err != nil {
		return store.Agent{}, err
	}
	r.Forget(key)
	r.Sched.Remove(key)
	if r.Release != nil {
		r.Release(ctx, key.Scope()) // its worktree goes, unless it holds unmerged work
	}
	r.Log.Info("spawned agent stopped", "agent", key.String(), "by", parent.Name)
	a.State = api.AgentStopped
	return a, nil
}
