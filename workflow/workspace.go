package workflow

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
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
	// Checks, when set, puts integrations through the merge queue: each
	// is a shell command (sh -c) run in a scratch worktree of the base
	// with the queued branches merged, and the base moves only when all
	// of them exit 0. Empty: integrate merges at once.
	Checks []string
	// CheckTimeout bounds one run of all the checks (DefaultCheckTimeout
	// when zero); Batch is how many queued branches are checked together
	// (DefaultBatch when zero).
	CheckTimeout time.Duration
	Batch        int
	Line         int // of the workspace: key, for the daemon's own checks
}

// The merge queue's defaults and the largest batch.
const (
	DefaultCheckTimeout = 10 * time.Minute
	DefaultBatch        = 4
	MaxBatch            = 32
)

// Timeout is CheckTimeout, or its default.
func (w *Workspace) Timeout() time.Duration {
	if w == nil || w.CheckTimeout <= 0 {
		return DefaultCheckTimeout
	}
	return w.CheckTimeout
}

// BatchSize is Batch, or its default.
func (w *Workspace) BatchSize() int {
	if w == nil || w.Batch <= 0 {
		return DefaultBatch
	}
	return w.Batch
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
	fs := p.fields(n, "in workspace", "git", "base", "checks", "check_timeout", "batch")
	w := &Workspace{Git: p.str(fs["git"], "git"), Base: p.str(fs["base"], "base"), Line: key.Line,
		Checks: p.checks(fs["checks"]), CheckTimeout: p.duration(fs["check_timeout"], "check_timeout", "20m"),
		Batch: p.positive(fs["batch"], "batch", "4")}
	if w.Batch > MaxBatch {
		p.add(fs["batch"], "batch %d is too large: at most %d branches are checked together", w.Batch, MaxBatch)
	}
	for _, k := range []string{"check_timeout", "batch"} {
		if !isNull(fs[k]) && len(w.Checks) == 0 {
			p.add(fs[k], "%s applies to the merge queue, which needs checks: add checks: [\"go test ./...\"] or remove %s", k, k)
		}
	}
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

// checks reads workspace.checks: a list of shell commands, taken as
// written (${{ }} is not expanded in them, so it is refused rather than
// run as a literal).
func (p *parser) checks(n *yaml.Node) []string {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "checks must be a list of shell commands, e.g. checks: [\"go build ./...\", \"go test ./...\"]")
		return nil
	}
	var out []string
	for _, item := range n.Content {
		item = deref(item)
		c := strings.TrimSpace(p.str(item, "checks items"))
		switch {
		case item.Kind != yaml.ScalarNode:
		case c == "":
			p.add(item, "a check is empty: write the shell command to run, e.g. go test ./...")
		case strings.Contains(c, "${{"):
			p.add(item, "checks do not expand ${{ }}: write the command as the shell should run it")
		default:
			out = append(out, c)
		}
	}
	if len(n.Content) == 0 {
		p.add(n, "checks is empty: list at least one command, or remove checks: to integrate without a queue")
	}
	return out
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
