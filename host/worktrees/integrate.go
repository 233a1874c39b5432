package worktrees

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// maxListed bounds the file names an error or a channel line lists.
const maxListed = 20

// authorize reads the git workspace of key's workflow for an integrate
// or discard (what) of key's worktree by by, and refuses by unless it is
// the user or an agent of that workflow with can_spawn: merging and
// throwing away work is the planners' call.
func (s *Service) authorize(ctx context.Context, key store.AgentKey, repo, by, what string) (store.Workflow, error) {
	if err := api.ValidateAgentName(key.Name); err != nil {
		return store.Workflow{}, err
	}
	wf, err := s.workspace(ctx, key.Scope())
	if err == nil {
		wf, err = wf.InRepo(repo)
	}
	if err != nil || by == team.SenderUser {
		return wf, err
	}
	a, err := s.db.GetAgent(ctx, store.AgentKey{Workflow: key.Workflow, Tag: key.Tag, Name: by})
	if err != nil {
		return wf, err
	}
	if !a.CanSpawn {
		return wf, api.Errorf(api.CodePermission, "%s may not %s worktrees: only the user and agents with can_spawn: true may; ask one of them in the channel", by, what)
	}
	return wf, nil
}

// Integrate merges agent key's branch of repository repo ("" for the
// workflow's own) into target (the repository's base when ""), as by (the user or a planner), with a merge commit even when
// a fast-forward would do. The merge is made without a working tree
// (merge-tree, commit-tree), then the target is moved: with update-ref
// when no worktree has it checked out, else by fast-forwarding the tree
// that has it (the user's checkout, typically) with `git merge --ff-only`,
// which is refused while that tree has uncommitted changes to tracked
// files. A conflict changes nothing and names the files.
//
// A workspace with checks queues the branch instead (host/mergequeue): the
// result says Queued with the entry's id, and the outcome comes later as
// a channel message.
func (s *Service) Integrate(ctx context.Context, key store.AgentKey, repo, by, target string) (tools.IntegrateResult, error) {
	if queued, res, err := s.viaQueue(ctx, key, repo, by, target); queued {
		return res, err
	}
	res, err := s.integrate(ctx, key, repo, by, target)
	if err != nil || !res.Merged {
		return res, err
	}
	s.announce(ctx, key.Scope(), by, fmt.Sprintf("%s's branch %s was integrated into %s%s by %s: merge commit %s (%d file%s changed).",
		key.Name, res.Branch, res.Target, inRepo(repo), by, short(res.Commit), len(res.Files), plural(len(res.Files))))
	if s.stopped(ctx, key) {
		s.Release(ctx, key.Scope()) // a kept worktree whose work is now merged goes
	}
	return res, nil
}

// viaQueue enqueues the integrate when key's workspace has checks; queued
// is false (and nothing done) when it has none.
func (s *Service) viaQueue(ctx context.Context, key store.AgentKey, repo, by, target string) (queued bool, res tools.IntegrateResult, err error) {
	wf, err := s.authorize(ctx, key, repo, by, "integrate")
	if err != nil {
		return true, res, err
	}
	ws, err := Settings(wf)
	if err != nil {
		return true, res, err
	}
	if ws == nil || len(ws.Checks) == 0 {
		return false, res, nil
	}
	if target == "" {
		target = wf.WorkspaceBase
	}
	if err := workflow.CheckBranchName(target); err != nil {
		return true, res, api.Errorf(api.CodeInvalid, "target: %w", err)
	}
	if s.queue == nil {
		return true, res, api.Errorf(api.CodeUnavailable, "the merge queue of %s is not running, so its checks cannot run: restart the daemon (`agent-worker stop --all`; the next command starts it), and report it with logs/daemon.log if it persists", wf.Name)
	}
	res, err = s.queue.Enqueue(ctx, wf, key, by, target)
	return true, res, err
}

// integrate is Integrate's git work, under the repository's lock.
func (s *Service) integrate(ctx context.Context, key store.AgentKey, repo, by, target string) (tools.IntegrateResult, error) {
	scope := key.Scope()
	wf, err := s.authorize(ctx, key, repo, by, "integrate")
	if err != nil {
		return tools.IntegrateResult{}, err
	}
	if target == "" {
		target = wf.WorkspaceBase
	}
	if err := workflow.CheckBranchName(target); err != nil {
		return tools.IntegrateResult{}, api.Errorf(api.CodeInvalid, "target: %w", err)
	}
	branch := workflow.BranchName(key.Workflow, key.Tag, key.Name)
	res := tools.IntegrateResult{Agent: key.Name, Repo: wf.Within, Branch: branch, Target: target, Files: []string{}}
	if target == branch {
		return res, api.Errorf(api.CodeInvalid, "cannot integrate %s into itself: name another target", branch)
	}
	repo = wf.WorkspaceRepo
	ctx, unlock := s.lock(ctx, repo)
	defer unlock()
	src, err := revParse(ctx, repo, branchRef(branch))
	if err != nil {
		return res, err
	}
	if src == "" {
		return res, api.Errorf(api.CodeNotFound, "%s has no branch %s: its worktree is made before its first run", key, branch)
	}
	old, err := revParse(ctx, repo, branchRef(target))
	if err != nil {
		return res, err
	}
	if old == "" {
		return res, api.Errorf(api.CodeNotFound, "branch %s does not exist in %s: name an existing branch (git branch lists them)", target, repo)
	}
	res.Commit = old
	if _, err := git(ctx, repo, "merge-base", "--is-ancestor", src, old); err == nil {
		return res, nil // already in: nothing to merge
	} else if exitCode(err) != 1 {
		return res, err
	}

	out, err := git(ctx, repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", old, src)
	fields := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
	switch exitCode(err) {
	case -1, 0:
		if err != nil {
			return res, err
		}
	case 1:
		files := dedupe(fields[1:])
		return res, api.Errorf(api.CodeConflict, "merging %s into %s conflicts in %d file%s: %s; %s is unchanged. Merge %s into the branch in %s's worktree, resolve and commit, then integrate again",
			branch, target, len(files), plural(len(files)), listFiles(files), target, target, key.Name)
	default:
		return res, err
	}
	msg := fmt.Sprintf("Merge branch '%s' into %s\n\nIntegrated by %s through agent-worker (%s).\n", branch, target, by, display(scope))
	commit, err := gitIn(ctx, repo, []byte(msg), "commit-tree", fields[0], "-p", old, "-p", src)
	if err != nil {
		return res, err
	}
	if err := s.moveBranch(ctx, repo, target, old, commit, branch); err != nil {
		return res, err
	}
	res.Merged, res.Commit = true, commit
	if diff, err := git(ctx, repo, "diff", "--name-only", "-z", old, commit); err == nil {
		res.Files = dedupe(strings.Split(diff, "\x00"))
	}
	s.log.Info("worktree integrated", "agent", key.String(), "branch", branch, "target", target, "commit", commit, "by", by)
	return res, nil
}

// moveBranch points target at commit if it still points at old. A branch
// checked out in a working tree is fast-forwarded there instead, so that
// tree does not show the merge as changes undone.
func (s *Service) moveBranch(ctx context.Context, repo, target, old, commit, branch string) error {
	tree, err := checkedOut(ctx, repo, target)
	if err != nil {
		return err
	}
	reflog := "agent-worker: integrate " + branch
	if tree == "" {
		if _, err := git(ctx, repo, "update-ref", "-m", reflog, branchRef(target), commit, old); err != nil {
			return api.Errorf(api.CodeConflict, "%s moved while it was being merged: integrate again (%w)", target, err)
		}
		return nil
	}
	dirty, err := git(ctx, tree, "status", "--porcelain=v1", "-z", "--untracked-files=no")
	if err != nil {
		return err
	}
	if dirty != "" {
		var files []string
		for _, f := range strings.Split(strings.TrimRight(dirty, "\x00"), "\x00") {
			if len(f) > 3 {
				files = append(files, f[3:])
			}
		}
		return api.Errorf(api.CodeConflict, "%s is checked out in %s, which has uncommitted changes (%s): commit or stash them and integrate again, or integrate into another branch (--into, or target)",
			target, tree, listFiles(files))
	}
	if _, err := git(ctx, tree, "merge", "--ff-only", "--no-edit", "--quiet", commit); err != nil {
		return api.Errorf(api.CodeConflict, "%s is checked out in %s, and moving it there failed; nothing was changed: %v. Mend what git says in %s and integrate again, or integrate into another branch (--into, or target)",
			target, tree, err, tree)
	}
	return nil
}

// checkedOut is the working tree that has branch checked out, or "".
func checkedOut(ctx context.Context, repo, branch string) (string, error) {
	out, err := git(ctx, repo, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return "", err
	}
	path := ""
	for _, line := range strings.Split(out, "\x00") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			path = p
		}
		if line == "branch "+branchRef(branch) {
			if _, err := os.Stat(path); err == nil {
				return path, nil
			}
		}
	}
	return "", nil
}

// Discard removes agent key's worktree and deletes its branch, as by (the
// user or a planner), for reason. Uncommitted changes in the worktree
// refuse it unless force; commits on the branch are what discard throws
// away, and the answer names the last one so it can be brought back.
func (s *Service) Discard(ctx context.Context, key store.AgentKey, repo, by, reason string, force bool) (tools.DiscardResult, error) {
	res, err := s.discard(ctx, key, repo, by, reason, force)
	if err != nil {
		return res, err
	}
	line := fmt.Sprintf("%s's worktree and branch %s%s were discarded by %s: %s", key.Name, res.Branch, inRepo(repo), by, reason)
	if res.LastCommit != "" {
		line += fmt.Sprintf(" (its last commit was %s; `git branch %s %s` brings it back until git prunes it)", short(res.LastCommit), res.Branch, short(res.LastCommit))
	}
	s.announce(ctx, key.Scope(), by, line)
	return res, nil
}

// discard is Discard's git work, under the repository's lock.
func (s *Service) discard(ctx context.Context, key store.AgentKey, repo, by, reason string, force bool) (tools.DiscardResult, error) {
	wf, err := s.authorize(ctx, key, repo, by, "discard")
	if err != nil {
		return tools.DiscardResult{}, err
	}
	if strings.TrimSpace(reason) == "" {
		return tools.DiscardResult{}, api.Errorf(api.CodeInvalid, "a discard needs a reason: say why the work is thrown away (it is posted in the channel)")
	}
	branch := workflow.BranchName(key.Workflow, key.Tag, key.Name)
	res := tools.DiscardResult{Agent: key.Name, Repo: wf.Within, Branch: branch}
	if busy, err := s.busy(ctx, key); err != nil {
		return res, err
	} else if busy {
		return res, api.Errorf(api.CodeConflict, "%s has a run in flight in its worktree: wait for it to end (or `agent-worker cancel %s`) and discard again", key, key.Name)
	}
	repo = wf.WorkspaceRepo
	ctx, unlock := s.lock(ctx, repo)
	defer unlock()
	path := s.path(wf, key)
	isTree, err := s.isWorktree(ctx, repo, path)
	if err != nil {
		return res, err
	}
	if res.LastCommit, err = revParse(ctx, repo, branchRef(branch)); err != nil {
		return res, err
	}
	if !isTree && res.LastCommit == "" {
		return res, api.Errorf(api.CodeNotFound, "%s has no worktree and no branch %s: nothing to discard", key, branch)
	}
	if isTree {
		cs, err := changes(ctx, path)
		if err != nil {
			return res, err
		}
		if len(cs) > 0 && !force {
			names := make([]string, len(cs))
			for i, c := range cs {
				names[i] = c.Path
			}
			return res, api.Errorf(api.CodeConflict, "%s's worktree %s has %d uncommitted change%s (%s): commit them, or discard with force to throw them away too",
				key.Name, path, len(cs), plural(len(cs)), listFiles(names))
		}
		if err := s.remove(ctx, repo, path, force); err != nil {
			return res, err
		}
	}
	if res.LastCommit != "" {
		if _, err := git(ctx, repo, "update-ref", "-d", branchRef(branch), res.LastCommit); err != nil {
			return res, err
		}
	}
	s.log.Info("worktree discarded", "agent", key.String(), "branch", branch, "last_commit", res.LastCommit, "by", by, "reason", reason)
	return res, nil
}

// remove removes a worktree and forgets it; force also drops uncommitted
// changes.
func (s *Service) remove(ctx context.Context, repo, path string, force bool) error {
	args := []string{"worktree", "remove", path}
	if force {
		args = []string{"worktree", "remove", "--force", "--force", path} // twice: a locked worktree too
	}
	if _, err := git(ctx, repo, args...); err != nil {
		return err
	}
	_, err := git(ctx, repo, "worktree", "prune")
	return err
}

// busy says whether key has a run in flight, which works in its worktree.
func (s *Service) busy(ctx context.Context, key store.AgentKey) (bool, error) {
	runs, err := s.db.ListRuns(ctx, store.RunFilter{Agent: key, Limit: 1})
	if err != nil || len(runs) == 0 {
		return false, err
	}
	return runs[0].State == api.RunRunning || runs[0].State == api.RunQueued, nil
}

// announce posts a system line in scope's channel about what by did;
// failing to is logged, the git work being done. A planner's action
// leaves the loop guard's count alone; the user's ends it.
func (s *Service) announce(ctx context.Context, scope store.Scope, by, line string) {
	req := team.SendRequest{Scope: scope, From: team.SenderSystem, Kind: store.KindSystem, Content: line, ByAgent: by != team.SenderUser}
	if _, err := s.team.Send(context.WithoutCancel(ctx), req); err != nil {
		s.log.Warn("post worktree notice", "workflow", scope.String(), "error", err)
	}
}

// inRepo names repository repo in a channel line ("" for the workflow's
// own, which needs no name).
func inRepo(repo string) string {
	if repo == "" {
		return ""
	}
	return " of repository " + repo
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
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
