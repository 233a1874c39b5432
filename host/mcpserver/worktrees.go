package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// Worktrees is what the worktree tools ask of the daemon's git worktrees
// (host/worktrees.Service); each call acts as by, the calling agent, whose
// can_spawn decides whether it may integrate or discard.
type Worktrees interface {
	Status(ctx context.Context, scope store.Scope, agent string) ([]tools.Worktree, error)
	Integrate(ctx context.Context, key store.AgentKey, repo, by, target string) (tools.IntegrateResult, error)
	Discard(ctx context.Context, key store.AgentKey, repo, by, reason string, force bool) (tools.DiscardResult, error)
	Queue(ctx context.Context, scope *store.Scope, all bool) ([]tools.QueueEntry, error)
}

// addWorktreeTools registers worktree_status, worktree_integrate and
// worktree_discard: the agents' git worktrees in a workflow with
// workspace: {git: worktree}.
func (s *Server) addWorktreeTools(srv *mcp.Server, me store.AgentKey) {
	scope := me.Scope()
	// The service checks the names it is given.
	teammate := func(name string) store.AgentKey {
		return store.AgentKey{Workflow: scope.Workflow, Tag: scope.Tag, Name: name}
	}
	tool(s, srv, me, tools.WorktreeStatus,
		"Show your team's git worktrees (each agent works in its own, on branch aw/<workflow>/<tag>/<agent>; one per git repository of the workspace): branch, commits ahead of and behind the base branch, uncommitted changes and the last commit. Give agent for one; omit it for every agent.",
		func(ctx context.Context, in tools.WorktreeStatusArgs) (tools.WorktreesResult, string, error) {
			if s.Worktrees == nil {
				return tools.WorktreesResult{}, "", noWorktrees()
			}
			ws, err := s.Worktrees.Status(ctx, scope, in.Agent)
			if err != nil {
				return tools.WorktreesResult{}, "", err
			}
			lines := make([]string, len(ws))
			for i, w := range ws {
				lines[i] = worktreeLine(w)
			}
			return tools.WorktreesResult{Worktrees: ws, Count: len(ws)}, strings.Join(lines, "\n"), nil
		})

	tool(s, srv, me, tools.WorktreeIntegrate,
		"Merge a teammate's branch into the base branch (or target) with a merge commit. A conflict changes nothing and lists the files. When the workspace has checks, the branch goes into the merge queue instead: you get the entry's id at once, and a channel message mentioning you and the branch's agent says later whether it landed (with the commit) or failed (with the failing check's output). Only agents with can_spawn may.",
		func(ctx context.Context, in tools.WorktreeIntegrateArgs) (tools.IntegrateResult, string, error) {
			if s.Worktrees == nil {
				return tools.IntegrateResult{}, "", noWorktrees()
			}
			res, err := s.Worktrees.Integrate(ctx, teammate(in.Agent), in.Repo, me.Name, in.Target)
			if err != nil {
				return tools.IntegrateResult{}, "", err
			}
			if res.Queued {
				return res, fmt.Sprintf("queued %s for %s as %s (%d ahead of it): it lands when the checks pass; the outcome comes as a channel message", res.Branch, res.Target, res.QueueID, res.Position), nil
			}
			if !res.Merged {
				return res, fmt.Sprintf("%s already has every commit of %s: nothing to merge", res.Target, res.Branch), nil
			}
			return res, fmt.Sprintf("merged %s into %s: commit %s, %d file(s) changed", res.Branch, res.Target, res.Commit, len(res.Files)), nil
		})

	tool(s, srv, me, tools.WorktreeQueue,
		"Show your team's merge queue (when the workspace has checks, worktree_integrate queues branches here): each entry's id, branch, state (queued, checking, landing; with all, also landed, failed, removed) and, for a failure, the check that failed and why.",
		func(ctx context.Context, in tools.WorktreeQueueArgs) (tools.QueueResult, string, error) {
			if s.Worktrees == nil {
				return tools.QueueResult{}, "", noWorktrees()
			}
			es, err := s.Worktrees.Queue(ctx, &scope, in.All)
			if err != nil {
				return tools.QueueResult{}, "", err
			}
			if len(es) == 0 {
				return tools.QueueResult{Entries: es}, "the merge queue is empty", nil
			}
			lines := make([]string, len(es))
			for i, e := range es {
				lines[i] = QueueLine(e)
			}
			return tools.QueueResult{Entries: es, Count: len(es)}, strings.Join(lines, "\n"), nil
		})

	tool(s, srv, me, tools.WorktreeDiscard,
		"Throw away a teammate's worktree and branch (its next run starts afresh from the base). Uncommitted changes refuse it unless force. Only agents with can_spawn may.",
		func(ctx context.Context, in tools.WorktreeDiscardArgs) (tools.DiscardResult, string, error) {
			if s.Worktrees == nil {
				return tools.DiscardResult{}, "", noWorktrees()
			}
			res, err := s.Worktrees.Discard(ctx, teammate(in.Agent), in.Repo, me.Name, in.Reason, in.Force)
			if err != nil {
				return tools.DiscardResult{}, "", err
			}
			return res, fmt.Sprintf("discarded %s's worktree and branch %s", res.Agent, res.Branch), nil
		})
}

func noWorktrees() error {
	return api.Errorf(api.CodeInvalid, "this daemon serves no git worktrees")
}

// worktreeLine is one worktree as the tool's text shows it.
func worktreeLine(w tools.Worktree) string {
	line := fmt.Sprintf("%s (%s) %s: %d ahead, %d behind %s", w.Agent, w.State, w.Branch, w.Ahead, w.Behind, w.Base)
	if w.Repo != "" {
		line = fmt.Sprintf("%s (%s) in repo %s, %s: %d ahead, %d behind %s", w.Agent, w.State, w.Repo, w.Branch, w.Ahead, w.Behind, w.Base)
	}
	if n := len(w.Changed); n > 0 {
		line += fmt.Sprintf("; %d uncommitted change(s)", n)
	}
	if c := w.LastCommit; c != nil {
		line += fmt.Sprintf("; last commit %.12s %q", c.SHA, c.Subject)
	}
	if w.KeptBecause != "" {
		line += "; kept: " + w.KeptBecause
	}
	if w.QueueID != "" {
		line += fmt.Sprintf("; in the merge queue as %s (%s)", w.QueueID, w.QueueState)
	}
	return line
}

// QueueLine is one merge queue entry as a line of text.
func QueueLine(e tools.QueueEntry) string {
	line := fmt.Sprintf("%s %s: %s's branch %s into %s (asked by %s)", e.ID, e.State, e.Agent, e.Branch, e.Base, e.By)
	switch {
	case e.State == tools.QueueQueued:
		line += fmt.Sprintf(", %d ahead", e.Position)
	case e.State == tools.QueueLanded:
		line += fmt.Sprintf(", commit %.12s", e.Commit)
	case e.Reason != "":
		line += ": " + e.Reason
	}
	return line
}
