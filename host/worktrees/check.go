package worktrees

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// minGit is the oldest git with `merge-tree --write-tree`, which integrate
// merges with.
var minGit = [2]int{2, 38}

var gitVersionRE = regexp.MustCompile(`git version (\d+)\.(\d+)`)

// Check resolves inst's workspace when the workflow starts or reloads, and
// refuses it at the file's line when the workflow's directory is not in a
// git repository, a base branch does not exist (or, with no base:, no
// branch is checked out), a repository's directory is missing, two git
// repositories are one, or git is missing or too old. cur is the workflow
// as it runs (zero on a start): a reload whose file names no base keeps
// the one each repository has, rather than following whatever the user
// has checked out now. A workflow without a workspace gives the zero
// Workspace.
func (s *Service) Check(ctx context.Context, inst *workflow.Instance, cur store.Workflow) (store.Workspace, error) {
	ws := inst.Workspace
	if ws == nil {
		return store.Workspace{}, nil
	}
	var out store.Workspace
	if ws.Worktrees() {
		if err := checkVersion(ctx, inst.Dir); err != nil {
			return store.Workspace{}, api.Errorf(api.CodeInvalid, "%s:%d: workspace: %w", inst.Path, ws.Line, err)
		}
	}
	if ws.Git == workflow.GitWorktree {
		at := fmt.Sprintf("%s:%d: workspace", inst.Path, ws.Line)
		top, base, err := resolveGit(ctx, at, inst.Dir, ws.Base, cur.WorkspaceBase, "workspace: {git: worktree, base: main}", "workspace:")
		if err != nil {
			return store.Workspace{}, err
		}
		out.Repo, out.Base = top, base
	}
	tops := map[string]string{}
	if out.Repo != "" {
		tops[out.Repo] = "the workflow's own"
	}
	for _, r := range ws.Repos {
		at := fmt.Sprintf("%s:%d: workspace repository %s", inst.Path, r.Line, r.Name)
		dir := r.Path
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(inst.Dir, dir)
		}
		dir = filepath.Clean(dir)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return store.Workspace{}, api.Errorf(api.CodeInvalid, "%s: %s is not a directory: create it, or correct the path", at, dir)
		}
		wr := store.WorkspaceRepo{Name: r.Name, Path: dir, Write: r.Write}
		if r.Git == workflow.GitWorktree {
			keep := ""
			if old := cur.Repo(r.Name); old != nil {
				keep = old.Base
			}
			top, base, err := resolveGit(ctx, at, dir, r.Base, keep, r.Name+": {path: "+r.Path+", git: worktree, base: main}", "its git: worktree")
			if err != nil {
				return store.Workspace{}, err
			}
			if other, ok := tops[top]; ok {
				return store.Workspace{}, api.Errorf(api.CodeInvalid, "%s: %s is the same git repository as %s (%s): an agent has one worktree of a repository; name it once", at, dir, other, top)
			}
			tops[top] = "repository " + r.Name
			wr.Git, wr.Top, wr.Base = true, top, base
		}
		out.Repos = append(out.Repos, wr)
	}
	if ws.Worktrees() {
		for _, a := range inst.Agents {
			if err := workflow.CheckBranchName(workflow.BranchName(inst.Name, inst.Tag, a.Name)); err != nil {
				return store.Workspace{}, api.Errorf(api.CodeInvalid, "%s:%d: workspace: agent %s's branch: %w; rename the workflow or the tag", inst.Path, ws.Line, a.Name, err)
			}
		}
	}
	return out, nil
}

// resolveGit finds the git repository dir is in and the base branch its
// worktrees start from: base as the file names it, else keep (what the
// running workflow has), else the branch checked out there. at starts
// each error; example is what the file could say, remove what the user
// could remove instead.
func resolveGit(ctx context.Context, at, dir, base, keep, example, remove string) (top, resolved string, err error) {
	top, err = git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil || top == "" {
		return "", "", api.Errorf(api.CodeInvalid, "%s: git needs a git repository: %s is not one; run git init or remove %s", at, dir, remove)
	}
	top = filepath.Clean(top)
	if base == "" {
		base = keep
	}
	if base == "" {
		cur, err := git(ctx, top, "symbolic-ref", "--quiet", "--short", "HEAD")
		if err != nil || cur == "" {
			return "", "", api.Errorf(api.CodeInvalid, "%s: %s has no branch checked out (a detached HEAD), so there is no current branch to start from: name one, e.g. %s", at, top, example)
		}
		base = cur
	}
	if err := workflow.CheckBranchName(base); err != nil {
		return "", "", api.Errorf(api.CodeInvalid, "%s: base: %w", at, err)
	}
	head, err := revParse(ctx, top, branchRef(base))
	if err != nil {
		return "", "", api.Errorf(api.CodeInvalid, "%s: %w", at, err)
	}
	if head == "" {
		return "", "", api.Errorf(api.CodeInvalid, "%s: base branch %s does not exist in %s (or has no commit yet): create it, or name another with base: (git branch lists them)", at, base, top)
	}
	return top, base, nil
}

// checkVersion refuses a git without merge-tree --write-tree.
func checkVersion(ctx context.Context, dir string) error {
	out, err := git(ctx, dir, "version")
	if errors.Is(err, errNoGit) {
		return fmt.Errorf("%w: install git or remove workspace:", err)
	}
	if err != nil {
		return err
	}
	m := gitVersionRE.FindStringSubmatch(out)
	if m == nil {
		return nil // an unusual build; let the commands speak for themselves
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < minGit[0] || major == minGit[0] && minor < minGit[1] {
		return fmt.Errorf("%s is too old: worktrees need git %d.%d or newer (for git merge-tree --write-tree); upgrade git or remove workspace:", out, minGit[0], minGit[1])
	}
	return nil
}
