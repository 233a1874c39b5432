package agents

import (
	"context"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
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
}

// Create validates spec, stores the agent and schedules it.
func (r *Registry) Create(ctx context.Context, spec api.AgentSpec) (store.Agent, error) {
	a, err := FromSpec(spec, r.Catalog, r.DefaultModel)
	if err != nil {
		return store.Agent{}, err
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
