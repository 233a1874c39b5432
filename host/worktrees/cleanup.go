package worktrees

import (
	"context"
	"os"
	"path/filepath"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// busBuffer is the cleanup listener's queue on the team bus.
const busBuffer = 1024

// Release tidies scope's worktrees after its agents stopped or were
// removed, or after the workflow stopped: each such agent's worktree is
// removed and its branch deleted, unless the branch has commits not merged
// into the base or the worktree uncommitted changes, which are kept for
// `worktree list`. Agents with a run in flight are left for the end of
// their run (Run hears it). Failures are logged: the work stays in git.
func (s *Service) Release(ctx context.Context, scope store.Scope) {
	wf, err := s.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if err != nil {
		return
	}
	for _, v := range wf.Views() {
		if err := s.release(ctx, v); err != nil {
			s.log.Warn("tidy worktrees", "workflow", scope.String(), "repo", v.Within, "error", err)
		}
	}
}

func (s *Service) release(ctx context.Context, wf store.Workflow) error {
	members, err := s.db.ListAgents(ctx, store.AgentFilter{Workflow: wf.Name, Tag: wf.Tag})
	if err != nil {
		return err
	}
	gone := map[string]bool{}
	for _, a := range members {
		gone[a.Name] = a.State == api.AgentStopped || !wf.State.Live()
	}
	branches, err := s.branches(ctx, wf)
	if err != nil {
		return err
	}
	for name := range branches {
		if _, member := gone[name]; !member {
			gone[name] = true // removed from the store: `stop <agent>`
		}
	}
	for name, g := range gone {
		key := store.AgentKey{Workflow: wf.Name, Tag: wf.Tag, Name: name}
		if !g {
			continue
		}
		if busy, err := s.busy(ctx, key); err != nil || busy {
			continue
		}
		if err := s.tidy(ctx, wf, key); err != nil {
			s.log.Warn("tidy worktree", "agent", key.String(), "error", err)
		}
	}
	return nil
}

// tidy removes key's worktree and branch if nothing in them would be
// lost, and keeps both otherwise.
func (s *Service) tidy(ctx context.Context, wf store.Workflow, key store.AgentKey) error {
	repo := wf.WorkspaceRepo
	ctx, unlock := s.lock(ctx, repo)
	defer unlock()
	path, branch := s.path(wf, key), workflow.BranchName(key.Workflow, key.Tag, key.Name)
	isTree, err := s.isWorktree(ctx, repo, path)
	if err != nil {
		return err
	}
	head, err := revParse(ctx, repo, branchRef(branch))
	if err != nil {
		return err
	}
	if !isTree && head == "" {
		return nil
	}
	if isTree {
		cs, err := changes(ctx, path)
		if err != nil {
			return err
		}
		if len(cs) > 0 {
			s.log.Info("worktree kept: uncommitted changes", "agent", key.String(), "path", path, "changes", len(cs))
			return nil
		}
	}
	if head != "" {
		base, err := revParse(ctx, repo, branchRef(wf.WorkspaceBase))
		if err != nil {
			return err
		}
		if base == "" {
			s.log.Info("worktree kept: its base branch is gone", "agent", key.String(), "base", wf.WorkspaceBase)
			return nil
		}
		if _, err := git(ctx, repo, "merge-base", "--is-ancestor", head, base); exitCode(err) == 1 {
			s.log.Info("worktree kept: commits not merged into the base", "agent", key.String(), "branch", branch, "base", wf.WorkspaceBase)
			return nil
		} else if err != nil {
			return err
		}
	}
	if isTree {
		if err := s.remove(ctx, repo, path, false); err != nil {
			return err
		}
	}
	if head != "" {
		if _, err := git(ctx, repo, "update-ref", "-d", branchRef(branch), head); err != nil {
			return err
		}
	}
	// The tag's and workflow's folders go with their last worktree.
	_ = os.Remove(filepath.Dir(path))
	_ = os.Remove(filepath.Dir(filepath.Dir(path)))
	s.log.Info("worktree removed", "agent", key.String(), "branch", branch)
	s.team.Bus.Publish(team.Event{Kind: team.EventWorktree, Agent: key, State: "removed"})
	return nil
}

// Run tidies worktrees until ctx ends: once at the start, for what a
// previous daemon left, after each run of an agent that has stopped
// meanwhile (a workflow stopped mid-run lets its runs finish first), and
// when an agent_state event says an agent stopped.
func (s *Service) Run(ctx context.Context) {
	for ctx.Err() == nil {
		sub := s.team.Bus.Subscribe(busBuffer)
		s.releaseAll(ctx) // after subscribing: nothing that ends now is missed
		s.listen(ctx, sub)
		sub.Close()
	}
}

// listen handles bus events until ctx ends or the bus drops sub.
func (s *Service) listen(ctx context.Context, sub *team.Subscription) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Dropped():
			return
		case e := <-sub.C:
			ended := e.Kind == team.EventRunFinished || e.Kind == team.EventRunFailed
			stopped := e.Kind == team.EventAgentState && e.State == string(api.AgentStopped)
			if ended || stopped {
				s.settle(ctx, e.Agent)
			}
			if e.Kind == team.EventWorkflow && s.queue != nil {
				s.queue.Kick() // resumed or reloaded: its merge queue may go on, with new checks
			}
		}
	}
}

// settle tidies key's worktree after its run ended or it stopped, if it or
// its workflow is gone. It runs after every run, so it is cheap when there
// is nothing to do: one read for a workflow without a git workspace, two
// for a live agent, and git only for the one agent that is gone.
func (s *Service) settle(ctx context.Context, key store.AgentKey) {
	wf, err := s.db.GetWorkflow(ctx, key.Workflow, key.Tag)
	views := wf.Views()
	if err != nil || len(views) == 0 || !s.gone(ctx, wf, key) {
		return
	}
	if busy, err := s.busy(ctx, key); err != nil || busy {
		return
	}
	for _, v := range views {
		if err := s.tidy(ctx, v, key); err != nil {
			s.log.Warn("tidy worktree", "agent", key.String(), "repo", v.Within, "error", err)
		}
	}
}

// stopped says whether key, of a workflow with a git workspace, is stopped
// or gone, or its workflow is.
func (s *Service) stopped(ctx context.Context, key store.AgentKey) bool {
	wf, err := s.db.GetWorkflow(ctx, key.Workflow, key.Tag)
	return err == nil && len(wf.Views()) > 0 && s.gone(ctx, wf, key)
}

// gone says whether key is stopped or removed, or its workflow wf stopped.
func (s *Service) gone(ctx context.Context, wf store.Workflow, key store.AgentKey) bool {
	if !wf.State.Live() {
		return true
	}
	a, err := s.db.GetAgent(ctx, key)
	if api.ErrorCode(err) == api.CodeNotFound {
		return true // removed from the store: `stop <agent>`
	}
	return err == nil && a.State == api.AgentStopped
}

// releaseAll tidies every workflow with a git workspace.
func (s *Service) releaseAll(ctx context.Context) {
	all, err := s.db.ListWorkflows(ctx)
	if err != nil {
		s.log.Warn("tidy worktrees", "error", err)
		return
	}
	for _, wf := range all {
		for _, v := range wf.Views() {
			if err := s.release(ctx, v); err != nil {
				s.log.Warn("tidy worktrees", "workflow", wf.Name+":"+wf.Tag, "repo", v.Within, "error", err)
			}
		}
	}
}
