package workflow

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// workspace: the setting as read, and what each mistake says, at its line.
func TestWorkspace(t *testing.T) {
	t.Parallel()
	const agents = "agents: {a: {backend: mock}}\n"
	good := map[string]*Workspace{
		"":                             nil,
		"workspace: {git: worktree}\n": {Git: GitWorktree, Line: 2},
		"workspace: {git: worktree, base: release/1.x}\n": {Git: GitWorktree, Base: "release/1.x", Line: 2},
		"workspace:\n  git: worktree\n  base: main\n":     {Git: GitWorktree, Base: "main", Line: 2},
		"workspace: {git: worktree, base: main, checks: [\"go build ./...\", \"go test ./...\"], check_timeout: 20m, batch: 4}\n": {
			Git: GitWorktree, Base: "main", Checks: []string{"go build ./...", "go test ./..."}, CheckTimeout: 20 * time.Minute, Batch: 4, Line: 2},
		"workspace:\n  git: worktree\n  checks:\n    - sh check.sh\n": {Git: GitWorktree, Checks: []string{"sh check.sh"}, Line: 2},
	}
	for yml, want := range good {
		f, err := Parse("wf.yaml", []byte(agents+yml))
		if err != nil {
			t.Errorf("%q: %v", yml, err)
			continue
		}
		if diff := cmp.Diff(want, f.Workspace); diff != "" {
			t.Errorf("%q: Workspace (-want +got):\n%s", yml, diff)
		}
		inst, err := Resolve(f, Vars{})
		if err != nil || !cmp.Equal(inst.Workspace, want) {
			t.Errorf("%q: resolved Workspace = %+v (%v), want %+v", yml, inst.Workspace, err, want)
		}
	}
	bad := map[string]string{
		"workspace: git\n":                                               "wf.yaml:2:12: workspace must be a map, e.g. workspace: {git: worktree, base: main}",
		"workspace: {base: main}\n":                                      "wf.yaml:2:12: workspace needs git: worktree",
		"workspace: {git: clone}\n":                                      `wf.yaml:2:18: workspace git "clone" is not known: the one kind is worktree`,
		"workspace: {git: worktree, branch: main}\n":                     `wf.yaml:2:28: unknown key "branch" in workspace`,
		"workspace: {git: worktree, base: -f}\n":                         `wf.yaml:2:34: workspace base: branch name "-f" is not valid: it may not start with -`,
		"workspace: {git: worktree, base: a..b}\n":                       `branch name "a..b" is not valid: it may not contain .., @{ or //`,
		"workspace: {git: worktree, base: 'my br'}\n":                    "it may not contain spaces",
		"workspace: {git: worktree, base: [main]}\n":                     "wf.yaml:2:34: base must be a single value",
		"workspace: {git: worktree, base: x.lock}\n":                     "it may not end with /, . or .lock",
		"workspace: {git: worktree, base: a/.b}\n":                       "no part of it may start with .",
		"workspace: {git: worktree}\nworkspaces: 1\n":                    `wf.yaml:3:1: unknown key "workspaces" at the top level: did you mean workspace?`,
		"workspace: {git: worktree, checks: make test}\n":                "wf.yaml:2:36: checks must be a list of shell commands",
		"workspace: {git: worktree, checks: []}\n":                       "wf.yaml:2:36: checks is empty",
		"workspace: {git: worktree, checks: [\"\"]}\n":                   "wf.yaml:2:37: a check is empty",
		"workspace: {git: worktree, checks: [\"echo ${{ env.X }}\"]}\n":  "wf.yaml:2:37: checks do not expand ${{ }}",
		"workspace: {git: worktree, checks: [[a]]}\n":                    "wf.yaml:2:37: checks items must be a single value",
		"workspace: {git: worktree, checks: [a], check_timeout: soon}\n": `wf.yaml:2:56: check_timeout "soon" is not a duration above 0`,
		"workspace: {git: worktree, checks: [a], batch: 0}\n":            "wf.yaml:2:48: batch must be a whole number above 0",
		"workspace: {git: worktree, checks: [a], batch: 33}\n":           "wf.yaml:2:48: batch 33 is too large: at most 32",
		"workspace: {git: worktree, batch: 2}\n":                         "wf.yaml:2:35: batch applies to the merge queue, which needs checks",
		"workspace: {git: worktree, check_timeout: 1m}\n":                "wf.yaml:2:43: check_timeout applies to the merge queue",
		"workspace: {git: worktree, check: [a]}\n":                       `unknown key "check" in workspace: did you mean checks?`,
	}
	for yml, want := range bad {
		_, err := Parse("wf.yaml", []byte(agents+yml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yml, err, want)
		}
	}
}

func TestCheckBranchName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"main", "release/1.x", "aw/review/pr-1/alice", "feature_x", "v1.2"} {
		if err := CheckBranchName(ok); err != nil {
			t.Errorf("CheckBranchName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", "HEAD", "@", "a..b", "a@{1}", "a//b", "a/", "a.", "a.lock", "/a", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[", `a\b`, ".a", "a/.b", "a\tb"} {
		if err := CheckBranchName(bad); err == nil {
			t.Errorf("CheckBranchName(%q) = nil, want an error", bad)
		}
	}
	if got := BranchName("review", "pr-1", "alice"); got != "aw/review/pr-1/alice" {
		t.Errorf("BranchName = %q", got)
	}
}

// workspace.repos: named repositories, read-only unless write, or git
// worktrees of their own; what each mistake says, at its line.
func TestWorkspaceRepos(t *testing.T) {
	t.Parallel()
	const agents = "agents: {a: {backend: mock}}\n"
	good := map[string]*Workspace{
		"workspace:\n  repos:\n    lib: ../lib\n": {Line: 2, Repos: []Repo{{Name: "lib", Path: "../lib", Line: 4}}},
		"workspace:\n  repos:\n    docs: {path: /srv/docs, write: true}\n    app: {path: ../app, git: worktree, base: main, checks: [make test]}\n": {Line: 2, Repos: []Repo{
			{Name: "docs", Path: "/srv/docs", Write: true, Line: 4},
			{Name: "app", Path: "../app", Write: true, Git: GitWorktree, Base: "main", Checks: []string{"make test"}, Line: 5}}},
		"workspace: {git: worktree, repos: {lib: ../lib}}\n": {Git: GitWorktree, Line: 2, Repos: []Repo{{Name: "lib", Path: "../lib", Line: 2}}},
	}
	for yml, want := range good {
		f, err := Parse("wf.yaml", []byte(agents+yml))
		if err != nil {
			t.Errorf("%q: %v", yml, err)
			continue
		}
		if diff := cmp.Diff(want, f.Workspace); diff != "" {
			t.Errorf("%q: Workspace (-want +got):\n%s", yml, diff)
		}
	}
	bad := map[string]string{
		"workspace: {repos: [../lib]}\n":                                      "wf.yaml:2:20: repos must be a map of names to paths",
		"workspace: {repos: {}}\n":                                            "wf.yaml:2:20: repos must be a map of names to paths",
		"workspace: {repos: {Lib: ../lib}}\n":                                 `wf.yaml:2:21: repository name "Lib" is not valid`,
		"workspace: {repos: {lib: ''}}\n":                                     "wf.yaml:2:26: repository lib has an empty path",
		"workspace: {repos: {lib: {write: true}}}\n":                          "wf.yaml:2:26: repository lib needs a path",
		"workspace: {repos: {lib: {path: x, writable: true}}}\n":              `wf.yaml:2:36: unknown key "writable" in repository lib: known keys are path, write`,
		"workspace: {repos: {lib: {path: x, write: yes please}}}\n":           "wf.yaml:2:43: write must be true or false",
		"workspace: {repos: {lib: {path: x, git: clone}}}\n":                  `wf.yaml:2:41: repository lib git "clone" is not known`,
		"workspace: {repos: {lib: {path: x, base: main}}}\n":                  "wf.yaml:2:26: repository lib needs git: worktree",
		"workspace: {repos: {lib: {path: x, git: worktree, write: false}}}\n": "wf.yaml:2:58: repository lib is written through each agent's own worktree (git: worktree): remove write",
		"workspace: {repos: {lib: [x]}}\n":                                    "wf.yaml:2:26: repository lib must be a path or a map",
		"workspace: {repos: {lib: x, lib: y}}\n":                              `duplicate`,
		"workspace: {checks: [make], repos: {lib: x}}\n":                      "wf.yaml:2:21: checks applies to the workflow's own git worktrees, which need git: worktree",
	}
	for yml, want := range bad {
		_, err := Parse("wf.yaml", []byte(agents+yml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yml, err, want)
		}
	}
}

// A reload that adds a repository, or makes one writable, widens what
// runs may do: it waits for the owner.
func TestWorkspaceReposWiden(t *testing.T) {
	t.Parallel()
	policy := func(yml string) Policy {
		t.Helper()
		f, err := Parse("wf.yaml", []byte("agents: {a: {backend: mock}}\n"+yml))
		if err != nil {
			t.Fatal(err)
		}
		return PolicyOf(f)
	}
	ro := policy("workspace: {repos: {lib: ../lib}}\n")
	rw := policy("workspace: {repos: {lib: {path: ../lib, write: true}}}\n")
	moved := policy("workspace: {repos: {lib: /elsewhere}}\n")
	none := policy("")
	for _, c := range []struct {
		name     string
		old, new Policy
		want     string
	}{
		{"added", none, ro, "workspace: repository lib at ../lib, which runs may read"},
		{"made writable", ro, rw, "workspace: repository lib is writable (was read-only)"},
		{"moved", ro, moved, "workspace: repository lib at /elsewhere"},
	} {
		if got := strings.Join(Widens(c.old, c.new), "\n"); !strings.Contains(got, c.want) {
			t.Errorf("%s: Widens = %q, want %q", c.name, got, c.want)
		}
	}
	if got := Widens(rw, ro); len(got) != 0 {
		t.Errorf("read-only after writable: Widens = %q, want nothing", got)
	}
	if got := Widens(ro, none); len(got) != 0 {
		t.Errorf("a repository removed: Widens = %q, want nothing", got)
	}
}
