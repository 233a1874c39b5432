package mergequeue

import (
	"context"

	"github.com/agent-worker/agent-worker/host/worktrees"
	"github.com/agent-worker/agent-worker/store"
)

// The git work and messages of host/worktrees, under the names the merge
// queue has always used for them.
var (
	git       = worktrees.Git
	gitIn     = worktrees.GitIn
	revParse  = worktrees.RevParse
	branchRef = worktrees.BranchRef
	exitCode  = worktrees.ExitCode
)

func (s *Service) lock(ctx context.Context, repo string) (context.Context, func()) {
	return s.wt.Lock(ctx, repo)
}

func (s *Service) isWorktree(ctx context.Context, repo, path string) (bool, error) {
	return s.wt.IsWorktree(ctx, repo, path)
}

func (s *Service) remove(ctx context.Context, repo, path string, force bool) error {
	return s.wt.Remove(ctx, repo, path, force)
}

func (s *Service) moveBranch(ctx context.Context, repo, target, old, commit, branch string) error {
	return s.wt.MoveBranch(ctx, repo, target, old, commit, branch)
}

func (s *Service) announce(ctx context.Context, scope store.Scope, by, line string) {
	s.wt.Announce(ctx, scope, by, line)
}

func (s *Service) stopped(ctx context.Context, key store.AgentKey) bool {
	return s.wt.Stopped(ctx, key)
}

func (s *Service) workspace(ctx context.Context, scope store.Scope) (store.Workflow, error) {
	return s.wt.Workspace(ctx, scope)
}

// The words of the channel lines, shared with host/worktrees.
var (
	short     = worktrees.Short
	plural    = worktrees.Plural
	listFiles = worktrees.ListFiles
	dedupe    = worktrees.Dedupe
)
