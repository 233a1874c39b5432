package worktrees

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/workflow"
)

// minGit is the oldest git with `merge-tree --write-tree`, which integrate
// merges with.
var minGit = [2]int{2, 38}

var gitVersionRE = regexp.MustCompile(`git version (\d+)\.(\d+)`)

// repoBase is a workflow's git workspace as the daemon keeps it: the
// repository's top-level directory and the base branch, resolved.
type repoBase struct {
	Repo, Base string
}

// Check resolves inst's workspace when the workflow starts or reloads: its
// repository and base branch, or "" for both without one. See resolve.
func (s *Service) Check(ctx context.Context, inst *workflow.Instance, keepBase string) (repo, base string, err error) {
	ws, err := resolve(ctx, inst, keepBase)
	return ws.Repo, ws.Base, err
}

// resolve resolves inst's workspace when the workflow starts or reloads, and
// refuses it at the file's workspace: line when the workflow's directory
// is not in a git repository, the base branch does not exist (or, with no
// base:, no branch is checked out), or git is missing or too old. keepBase
// is the base a running workflow already has: a reload whose file names
// none keeps it, rather than following whatever the user has checked out
// now. A workflow without a workspace gives the zero repoBase.
func resolve(ctx context.Context, inst *workflow.Instance, keepBase string) (repoBase, error) {
	ws := inst.Workspace
	if ws == nil {
		return repoBase{}, nil
	}
	at := fmt.Sprintf("%s:%d: workspace", inst.Path, ws.Line)
	if err := checkVersion(ctx, inst.Dir); err != nil {
		return repoBase{}, api.Errorf(api.CodeInvalid, "%s: %w", at, err)
	}
	top, err := git(ctx, inst.Dir, "rev-parse", "--show-toplevel")
	if err != nil || top == "" {
		return repoBase{}, api.Errorf(api.CodeInvalid, "%s: git needs a git repository: %s is not one; run git init or remove workspace:", at, inst.Dir)
	}
	top = filepath.Clean(top)
	base := ws.Base
	if base == "" {
		base = keepBase
	}
	if base == "" {
		cur, err := git(ctx, top, "symbolic-ref", "--quiet", "--short", "HEAD")
		if err != nil || cur == "" {
			return repoBase{}, api.Errorf(api.CodeInvalid, "%s: %s has no branch checked out (a detached HEAD), so there is no current branch to start from: name one, e.g. workspace: {git: worktree, base: main}", at, top)
		}
		base = cur
	}
	if err := workflow.CheckBranchName(base); err != nil {
		return repoBase{}, api.Errorf(api.CodeInvalid, "%s: base: %w", at, err)
	}
	head, err := revParse(ctx, top, branchRef(base))
	if err != nil {
		return repoBase{}, api.Errorf(api.CodeInvalid, "%s: %w", at, err)
	}
	if head == "" {
		return repoBase{}, api.Errorf(api.CodeInvalid, "%s: base branch %s does not exist in %s (or has no commit yet): create it, or name another with base: (git branch lists them)", at, base, top)
	}
	for _, a := range inst.Agents {
		if err := workflow.CheckBranchName(workflow.BranchName(inst.Name, inst.Tag, a.Name)); err != nil {
			return repoBase{}, api.Errorf(api.CodeInvalid, "%s: agent %s's branch: %w; rename the workflow or the tag", at, a.Name, err)
		}
	}
	return repoBase{Repo: top, Base: base}, nil
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
