package mergequeue

import (
	"context"
	"fmt"
	"strings"

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

// maxListed bounds the file names a channel line lists.
const maxListed = 20

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// listFiles joins file names for a message, at most maxListed of them.
func listFiles(files []string) string {
	if len(files) > maxListed {
		return strings.Join(files[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(files)-maxListed)
	}
	return strings.Join(files, ", ")
}

// dedupe drops empty and repeated names, keeping the order.
func dedupe(names []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, n := range names {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
