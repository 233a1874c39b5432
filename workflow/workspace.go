package workflow

import (
	"fmt"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"
)

// Workspace says where a workflow's agents work. With Git set to
// GitWorktree each agent works in a git worktree of its own, on the branch
// BranchName gives it, cut from Base; the daemon checks that the
// workflow's directory is in a repository when it loads the file.
type Workspace struct {
	Git string // GitWorktree
	// Base is the branch worktrees start from and integrate into by
	// default; "" is the repository's current branch when the workflow
	// starts.
	Base string
	Line int // of the workspace: key, for the daemon's own checks
}

// GitWorktree is the one value workspace.git takes.
const GitWorktree = "worktree"

const workspaceExample = "workspace: {git: worktree, base: main}"

// workspace reads workspace: {git: worktree, base: BRANCH}.
func (p *parser) workspace(key, n *yaml.Node) *Workspace {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "workspace must be a map, e.g. %s", workspaceExample)
		return nil
	}
	fs := p.fields(n, "in workspace", "git", "base")
	w := &Workspace{Git: p.str(fs["git"], "git"), Base: p.str(fs["base"], "base"), Line: key.Line}
	switch {
	case isNull(fs["git"]):
		p.add(n, "workspace needs git: worktree (each agent works in a git worktree of its own), e.g. %s", workspaceExample)
		return nil
	case w.Git != GitWorktree:
		p.add(fs["git"], "workspace git %s is not known: the one kind is worktree, e.g. %s", Quote(w.Git), workspaceExample)
		return nil
	}
	if v := fs["base"]; !isNull(v) {
		if err := CheckBranchName(w.Base); err != nil {
			p.add(v, "workspace base: %v", err)
			return nil
		}
	}
	return w
}

// BranchName is the branch of an agent's worktree: aw/<workflow>/<tag>/<agent>.
func BranchName(workflow, tag, agent string) string {
	return "aw/" + workflow + "/" + tag + "/" + agent
}

// CheckBranchName says what is wrong with a git branch name, or returns
// nil: git's own rules (git check-ref-format --branch), checked here so a
// file's base: is refused at its line and a name can never be read by git
// as an option. It is the one check of a branch name the daemon makes.
func CheckBranchName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("branch name %s is not valid: %s", Quote(name), why)
	}
	switch {
	case name == "":
		return fmt.Errorf("branch name is empty: name a branch, e.g. main")
	case strings.HasPrefix(name, "-"):
		return bad("it may not start with -")
	case name == "@" || name == "HEAD":
		return bad("name a branch, not " + name)
	case strings.Contains(name, ".."), strings.Contains(name, "@{"), strings.Contains(name, "//"):
		return bad("it may not contain .., @{ or //")
	case strings.HasSuffix(name, "/"), strings.HasSuffix(name, "."), strings.HasSuffix(name, ".lock"):
		return bad("it may not end with /, . or .lock")
	case strings.HasPrefix(name, "/"):
		return bad("it may not start with /")
	case strings.ContainsFunc(name, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("~^:?*[\\", r)
	}):
		return bad(`it may not contain spaces or any of ~ ^ : ? * [ \`)
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") {
			return bad("no part of it may start with .")
		}
	}
	return nil
}
