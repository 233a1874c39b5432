package worktrees

import (
	"context"

	"github.com/agent-worker/agent-worker/store"
)

// What the merge queue (host/mergequeue) does its git work with: the same
// repository locks, plumbing and messages as integrate, so the queue and
// an integrate never interleave their git commands in one repository.

// Git runs git in dir without a shell and returns its trimmed stdout; a
// failure carries its stderr and exit status (ExitCode).
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	return git(ctx, dir, args...)
}

// GitIn is Git with stdin.
func GitIn(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	return gitIn(ctx, dir, stdin, args...)
}

// RevParse is ref's commit in repo, "" when there is no such ref.
func RevParse(ctx context.Context, repo, ref string) (string, error) { return revParse(ctx, repo, ref) }

// BranchRef is branch's full ref name.
func BranchRef(branch string) string { return branchRef(branch) }

// ExitCode is the exit status of a failed git command, -1 for another
// error.
func ExitCode(err error) int { return exitCode(err) }

// Root is where the worktrees live (Home/worktrees); the merge queue's
// scratch worktrees are there too, under names no agent can have.
func (s *Service) Root() string { return s.root }

// Lock takes repo's lock and returns the context the git work under it
// runs in, and the lock's release.
func (s *Service) Lock(ctx context.Context, repo string) (context.Context, func()) {
	return s.lock(ctx, repo)
}

// IsWorktree says whether path is a worktree of repo; call it under
// repo's Lock.
func (s *Service) IsWorktree(ctx context.Context, repo, path string) (bool, error) {
	return s.isWorktree(ctx, repo, path)
}

// Remove removes the worktree at path from repo; call it under repo's
// Lock.
func (s *Service) Remove(ctx context.Context, repo, path string, force bool) error {
	return s.remove(ctx, repo, path, force)
}

// MoveBranch points target at commit if it still points at old, as
// integrate does (fast-forwarding a worktree that has target checked
// out); call it under repo's Lock.
func (s *Service) MoveBranch(ctx context.Context, repo, target, old, commit, branch string) error {
	return s.moveBranch(ctx, repo, target, old, commit, branch)
}

// Announce posts a system line in scope's channel about what by did.
func (s *Service) Announce(ctx context.Context, scope store.Scope, by, line string) {
	s.announce(ctx, scope, by, line)
}

// Stopped says whether key, of a workflow with a git workspace, is
// stopped or gone, or its workflow is.
func (s *Service) Stopped(ctx context.Context, key store.AgentKey) bool { return s.stopped(ctx, key) }

// Workspace reads scope's workflow and refuses one without a git
// workspace.
func (s *Service) Workspace(ctx context.Context, scope store.Scope) (store.Workflow, error) {
	return s.workspace(ctx, scope)
}

// Short is a commit's id as the channel lines show it (12 characters).
func Short(sha string) string { return short(sha) }

// Plural is "s" unless n is 1.
func Plural(n int) string { return plural(n) }

// ListFiles joins file names for a channel line, at most 20 of them.
func ListFiles(files []string) string { return listFiles(files) }

// Dedupe drops empty and repeated names, keeping the order.
func Dedupe(names []string) []string { return dedupe(names) }
