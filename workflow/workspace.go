package workflow

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Workspace says where a workflow's agents work. With Git set to
// GitWorktree each agent works in a git worktree of its own, on the branch
// BranchName gives it, cut from Base; the daemon checks that the
// workflow's directory is in a repository when it loads the file. Repos
// are further repositories the agents may use beside their working
// directory.
type Workspace struct {
	Git string // GitWorktree, or "" when only Repos are set
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
	// Repos are the named repositories, in the file's order.
	Repos []Repo
}

// Repo is one repository of workspace.repos: a directory the agents read
// (or write, with Write), or with Git set to GitWorktree a git repository
// in which each agent works in a worktree of its own, integrated into Base
// (through the merge queue when it has Checks) like the workspace's own.
type Repo struct {
	Name string
	// Path is the directory as the file writes it; a relative one is
	// taken from the workflow's directory.
	Path  string
	Write bool
	Git   string // GitWorktree or ""
	// Base, Checks, CheckTimeout and Batch are as in Workspace, for a
	// repository with Git set.
	Base         string
	Checks       []string
	CheckTimeout time.Duration
	Batch        int
	Line         int // of the repository's name
}

// Repo is the repository named name, or nil.
func (w *Workspace) Repo(name string) *Repo {
	if w == nil {
		return nil
	}
	for i := range w.Repos {
		if w.Repos[i].Name == name {
			return &w.Repos[i]
		}
	}
	return nil
}

// RepoNames lists the names of w's repositories.
func (w *Workspace) RepoNames() []string {
	var out []string
	if w != nil {
		for _, r := range w.Repos {
			out = append(out, r.Name)
		}
	}
	return out
}

// Worktrees reports whether the agents work in their own git worktrees:
// of the workflow's repository, or of one of its repos.
func (w *Workspace) Worktrees() bool {
	if w == nil {
		return false
	}
	if w.Git == GitWorktree {
		return true
	}
	for _, r := range w.Repos {
		if r.Git == GitWorktree {
			return true
		}
	}
	return false
}

// Unchecked reports whether some worktree of w integrates without checks:
// the workflow's own, or one of its repos'.
func (w *Workspace) Unchecked() bool {
	if w == nil {
		return false
	}
	if w.Git == GitWorktree && len(w.Checks) == 0 {
		return true
	}
	for _, r := range w.Repos {
		if r.Git == GitWorktree && len(r.Checks) == 0 {
			return true
		}
	}
	return false
}

// Settings is the git workspace of the repository named repo ("" for the
// workflow's own): its base, checks, timeout and batch, as a Workspace;
// nil when there is none.
func (w *Workspace) Settings(repo string) *Workspace {
	if w == nil {
		return nil
	}
	if repo == "" {
		if w.Git != GitWorktree {
			return nil
		}
		return w
	}
	r := w.Repo(repo)
	if r == nil || r.Git != GitWorktree {
		return nil
	}
	return &Workspace{Git: r.Git, Base: r.Base, Checks: r.Checks, CheckTimeout: r.CheckTimeout, Batch: r.Batch, Line: r.Line}
}

// repoNameRE is a repository's name: what a tool's repo argument says.
var repoNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

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

const (
	workspaceExample = "workspace: {git: worktree, base: main}"
	reposExample     = "repos: {lib: ../lib, app: {path: ../app, git: worktree}}"
)

// workspace reads workspace: {git: worktree, base: BRANCH, repos: {...}}.
func (p *parser) workspace(key, n *yaml.Node) *Workspace {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "workspace must be a map, e.g. %s", workspaceExample)
		return nil
	}
	fs := p.fields(n, "in workspace", "git", "base", "checks", "check_timeout", "batch", "repos")
	w := &Workspace{Line: key.Line, Repos: p.repos(fs["repos"])}
	if isNull(fs["git"]) && !isNull(fs["repos"]) {
		for _, k := range []string{"base", "checks", "check_timeout", "batch"} {
			if !isNull(fs[k]) {
				p.add(fs[k], "%s applies to the workflow's own git worktrees, which need git: worktree: add it, or move %s into a repository of repos:", k, k)
			}
		}
		return w
	}
	ok := p.gitSettings(n, fs, "workspace", workspaceExample, &w.Git, &w.Base, &w.Checks, &w.CheckTimeout, &w.Batch)
	if !ok {
		return nil
	}
	return w
}

// gitSettings reads the git worktree settings of the workspace or of one
// of its repos (where names it in messages) into the pointers; ok is
// false when they cannot be used.
func (p *parser) gitSettings(n *yaml.Node, fs map[string]*yaml.Node, where, example string, git, base *string, checks *[]string, timeout *time.Duration, batch *int) bool {
	*git, *base = p.str(fs["git"], "git"), p.str(fs["base"], "base")
	*checks, *timeout = p.checks(fs["checks"]), p.duration(fs["check_timeout"], "check_timeout", "20m")
	*batch = p.positive(fs["batch"], "batch", "4")
	if *batch > MaxBatch {
		p.add(fs["batch"], "batch %d is too large: at most %d branches are checked together", *batch, MaxBatch)
	}
	for _, k := range []string{"check_timeout", "batch"} {
		if !isNull(fs[k]) && len(*checks) == 0 {
			p.add(fs[k], "%s applies to the merge queue, which needs checks: add checks: [\"go test ./...\"] or remove %s", k, k)
		}
	}
	switch {
	case isNull(fs["git"]):
		p.add(n, "%s needs git: worktree (each agent works in a git worktree of its own), e.g. %s", where, example)
		return false
	case *git != GitWorktree:
		p.add(fs["git"], "%s git %s is not known: the one kind is worktree, e.g. %s", where, Quote(*git), example)
		return false
	}
	if v := fs["base"]; !isNull(v) {
		if err := CheckBranchName(*base); err != nil {
			p.add(v, "%s base: %v", where, err)
			return false
		}
	}
	return true
}

// repos reads workspace.repos: each a path, or {path, write, git, base,
// checks, check_timeout, batch}.
func (p *parser) repos(n *yaml.Node) []Repo {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		p.add(n, "repos must be a map of names to paths, e.g. %s", reposExample)
		return nil
	}
	var out []Repo
	for _, e := range p.entries(n, "in repos") {
		if !repoNameRE.MatchString(e.Key) {
			p.add(e.K, "repository name %s is not valid: use lower-case letters, digits, - and _, starting with a letter, at most 32", Quote(e.Key))
			continue
		}
		r := Repo{Name: e.Key, Line: e.K.Line}
		where := "repository " + e.Key
		switch v := e.V; {
		case v.Kind == yaml.ScalarNode && !isNull(v):
			r.Path = strings.TrimSpace(p.str(v, where))
		case v.Kind == yaml.MappingNode:
			fs := p.fields(v, "in "+where, "path", "write", "git", "base", "checks", "check_timeout", "batch")
			r.Path, r.Write = strings.TrimSpace(p.str(fs["path"], "path")), p.boolean(fs["write"], "write")
			if isNull(fs["path"]) {
				p.add(v, "%s needs a path, e.g. %s: {path: ../%s}", where, e.Key, e.Key)
				continue
			}
			if !isNull(fs["git"]) || !isNull(fs["base"]) || !isNull(fs["checks"]) {
				if !isNull(fs["write"]) {
					p.add(fs["write"], "%s is written through each agent's own worktree (git: worktree): remove write", where)
				}
				if !p.gitSettings(v, fs, where, e.Key+": {path: ../"+e.Key+", git: worktree}", &r.Git, &r.Base, &r.Checks, &r.CheckTimeout, &r.Batch) {
					continue
				}
				r.Write = true
			}
		default:
			p.add(v, "%s must be a path or a map, e.g. %s", where, reposExample)
			continue
		}
		if r.Path == "" {
			p.add(e.V, "%s has an empty path: name its directory, e.g. ../%s", where, e.Key)
			continue
		}
		out = append(out, r)
	}
	return out
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
