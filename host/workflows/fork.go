package workflows

import (
	"context"
	"errors"
	"fmt"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// Forked is what Fork did.
type Forked struct {
	Scope store.Scope
	Seed  store.ForkSeed
	// Documents were copied; Changed are those of them changed after the
	// fork point (copied as they are now: no kept version reaches back).
	Documents, Changed []string
	Running            bool
}

// Fork starts req.Tag, a new tag of from's workflow, from the team's
// state at the channel message req.At (store.SeedFork): the workflow's
// file is read and set up again under the new tag with the source's
// params, like `start --tag`, but no kickoff is posted; the channel up
// to req.At, the task board and the agents' read positions as of then,
// and the documents as they were then (store.DocumentAt) are copied in. The fork starts
// paused, or running with req.Run. Every refusal (an unknown source, a
// seq not in its channel, a tag that exists, a file that no longer
// parses) comes before anything is written; a failure after the new tag
// exists removes it.
func (ws *Manager) Fork(ctx context.Context, from store.Scope, req api.ForkWorkflow) (Forked, error) {
	if from.Workflow == api.GlobalWorkflow {
		return Forked{}, api.Errorf(api.CodeInvalid, "the standalone agents' scope @global cannot be forked: fork a workflow (@wf:tag)")
	}
	src, err := ws.db.GetWorkflow(ctx, from.Workflow, from.Tag)
	if err != nil {
		return Forked{}, noWorkflow(from, err)
	}
	if req.Tag == "" {
		return Forked{}, api.Errorf(api.CodeInvalid, "tag is required: the new tag the fork runs under, e.g. --tag debug-1")
	}
	if err := api.ValidateScopeName("tag", req.Tag); err != nil {
		return Forked{}, err
	}
	to := store.Scope{Workflow: from.Workflow, Tag: req.Tag}
	if err := ws.tagFree(ctx, to); err != nil {
		return Forked{}, err
	}
	point, err := ws.db.GetForkPoint(ctx, from, req.At)
	if err != nil {
		return Forked{}, err
	}
	if src.SourcePath == "" {
		return Forked{}, api.Errorf(api.CodeInvalid, "%s has no workflow file to run again", displayScope(from))
	}
	content, err := workflow.ReadFile(src.SourcePath)
	if err != nil {
		return Forked{}, readError(src.SourcePath, err)
	}
	f, err := ws.parse(src.SourcePath, content)
	if err != nil {
		return Forked{}, problemsError(err)
	}
	if f.Name != from.Workflow {
		return Forked{}, api.Errorf(api.CodeInvalid, "%s now names workflow %q, not %q: the fork runs the file under the source's name", src.SourcePath, f.Name, from.Workflow)
	}

	setupCtx, cancelSetup := context.WithCancel(ctx)
	defer cancelSetup()
	if !ws.reserve(to, cancelSetup) {
		return Forked{}, api.Errorf(api.CodeConflict, "%s is already being started: choose another --tag", displayScope(to))
	}
	defer ws.unreserve(to)
	vars := workflow.Vars{Workflow: f.Name, Tag: to.Tag, Params: src.Params}
	if vars.Setup, err = workflow.RunSetup(setupCtx, f, vars); err != nil {
		return Forked{}, api.Errorf(api.CodeInvalid, "%w", err)
	}
	inst, err := workflow.Resolve(f, vars)
	if err != nil {
		return Forked{}, problemsError(err)
	}

	unlock := ws.lock(to)
	out, err := ws.forkLocked(ctx, inst, content, vars, from, to, point)
	unlock()
	if err != nil {
		return Forked{}, err
	}
	ws.watch(src.SourcePath, to)
	ws.team.Bus.Publish(team.Event{Kind: team.EventWorkflow, Agent: store.AgentKey{Workflow: to.Workflow, Tag: to.Tag}, State: "forked"})
	ws.log.Info("workflow forked", "from", from.String(), "at", req.At, "workflow", to.String(), "messages", out.Seed.Messages, "tasks", len(out.Seed.Tasks))
	if req.Run {
		if err := ws.Resume(ctx, to); err != nil {
			return out, fmt.Errorf("fork %s is made, paused; its resume failed: %w", displayScope(to), err)
		}
		out.Running = true
	}
	return out, nil
}

// tagFree refuses a tag that names a workflow instance, in any state.
func (ws *Manager) tagFree(ctx context.Context, to store.Scope) error {
	old, err := ws.db.GetWorkflow(ctx, to.Workflow, to.Tag)
	switch {
	case err == nil:
		return api.Errorf(api.CodeConflict, "%s exists already (%s): a fork starts a new tag; choose another --tag", displayScope(to), old.State)
	case api.ErrorCode(err) != api.CodeNotFound:
		return err
	}
	return nil
}

// forkLocked makes the fork under its scope's lock: the workflow paused
// with its agents, then the seed, then the documents.
func (ws *Manager) forkLocked(ctx context.Context, inst *workflow.Instance, content []byte, vars workflow.Vars,
	from, to store.Scope, point store.ForkPoint) (Forked, error) {
	if err := ws.tagFree(ctx, to); err != nil {
		return Forked{}, err
	}
	out := Forked{Scope: to}
	undo := func(cause error) error {
		ctx := context.WithoutCancel(ctx)
		if ms, err := ws.db.ListAgents(ctx, store.AgentFilter{Workflow: to.Workflow, Tag: to.Tag}); err == nil {
			for _, a := range ms {
				ws.sched.Remove(a.Key())
			}
		}
		if err := ws.db.DeleteWorkflow(ctx, to.Workflow, to.Tag); err != nil && api.ErrorCode(err) != api.CodeNotFound {
			return errors.Join(cause, fmt.Errorf("remove the half-made fork %s: %w", displayScope(to), err))
		}
		return cause
	}
	if err := ws.apply(ctx, inst, content, vars, ws.now(), api.WorkflowPaused); err != nil {
		return Forked{}, undo(err)
	}
	var err error
	if out.Seed, err = ws.db.SeedFork(ctx, from, to, point.Seq); err != nil {
		return Forked{}, undo(err)
	}
	docs, err := ws.team.DocList(ctx, from)
	if err != nil {
		return Forked{}, undo(fmt.Errorf("list the documents of %s: %w", displayScope(from), err))
	}
	for _, d := range docs {
		// The version of the fork's seq where one is recorded; else the
		// document as it is now, named as changed if it changed since.
		text, at, err := ws.db.DocumentAt(ctx, from, d.Path, point.Seq)
		if err == nil && at == store.DocAbsent {
			continue // made after the fork's seq
		}
		if err == nil && at == store.DocUnknown {
			text, err = ws.team.DocRead(ctx, from, d.Path)
		}
		if err == nil {
			err = ws.team.DocWrite(ctx, to, team.SenderUser, d.Path, text)
		}
		if err != nil {
			return Forked{}, undo(fmt.Errorf("copy document %s: %w", d.Path, err))
		}
		out.Documents = append(out.Documents, d.Path)
		if at == store.DocUnknown && d.UpdatedAt.After(point.At) {
			out.Changed = append(out.Changed, d.Path)
		}
	}
	return out, nil
}
