package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// Several repositories (issue 45, item 3): a workflow names a read-only
// library and an app it commits to through worktrees. Alice reads the
// one and commits in the other; her write to the read-only one is
// refused by the sandbox; the planner's integration of her app branch
// waits for a person (no checks) and lands on the app's main once
// approved. Naming a repository the workspace lacks is a clear error.
func TestE2EWorkspaceRepos(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	c := newCLI(t)
	lib, app := newRepoE2E(t), newRepoE2E(t)
	writeFile(t, filepath.Join(lib, "API.md"), "lib v1: call Hello()\n")
	gitE2E(t, lib, "add", "API.md")
	gitE2E(t, lib, "commit", "-q", "-m", "lib v1")
	writeFile(t, filepath.Join(app, "README"), "app\n")
	gitE2E(t, app, "add", "README")
	gitE2E(t, app, "commit", "-q", "-m", "app v1")
	appBefore := gitE2E(t, app, "rev-parse", "main")
	dir := realPath(t, t.TempDir())
	rel, err := filepath.Rel(dir, realPath(t, lib))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "team.yaml")
	writeFile(t, file, fmt.Sprintf(`name: team
workspace:
  repos:
    lib: %s
    app: {path: %s, git: worktree}
agents:
  alice:
    backend: mock
    config:
      script:
        - {shell: "cat API.md", repo: lib}
        - {shell: "grep -o 'Hello()' %s/API.md > uses.txt && git add uses.txt && git -c user.name=alice -c user.email=a@example.com commit -qm 'alice uses lib' && echo COMMITTED", repo: app}
        - {shell: "echo '== lib write'; echo hacked >> API.md", repo: lib}
        - {shell: "echo '== end'", repo: app}
        - result: done
  lead:
    backend: mock
    can_spawn: true
    config:
      script:
        - {tool: worktree_integrate, args: {agent: alice, repo: app}}
        - result: integrated
`, rel, realPath(t, app), realPath(t, lib)))
	c.ok("start", file, "--background")
	c.ok("send", "alice@team", "use the library in the app")
	c.waitFor("alice's run", func() bool { a := c.agent("alice@team"); return len(a.Runs) > 0 && a.Runs[0].State != "running" })
	a := c.agent("alice@team")
	logs := c.ok("logs", a.Runs[0].ID)
	out := outputOf(logs)
	if a.Runs[0].State != "succeeded" || !strings.Contains(out, "lib v1: call Hello()") || !strings.Contains(out, "COMMITTED") {
		t.Fatalf("alice could not read lib and commit in app (%s):\n%s", a.Runs[0].State, logs)
	}
	if s := between(out, "== lib write", "== end"); !strings.Contains(s, "Permission denied") {
		t.Errorf("alice's write to the read-only lib was not refused:\n%s", s)
	}
	if b, err := os.ReadFile(filepath.Join(lib, "API.md")); err != nil || strings.Contains(string(b), "hacked") {
		t.Errorf("lib was written (%v): %q", err, b)
	}
	if got := gitE2E(t, app, "log", "-1", "--format=%s", "aw/team/main/alice"); got != "alice uses lib" {
		t.Errorf("alice's app branch head = %q", got)
	}
	if got := c.ok("worktree", "list", "@team"); !strings.Contains(got, "REPO") || !strings.Contains(got, "alice@team:main  app") {
		t.Errorf("worktree list lacks alice's worktree of app:\n%s", got)
	}

	// Bad input: a repository the workspace does not name, and one with
	// no worktrees.
	if r := c.run("worktree", "integrate", "alice@team", "--repo", "nope"); r.code != api.ExitUsage ||
		!strings.Contains(r.stderr, `repo "nope" is not in the workspace of team:main: use one of lib, app`) {
		t.Errorf("integrate --repo nope: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := c.run("worktree", "integrate", "alice@team", "--repo", "lib"); r.code != api.ExitUsage ||
		!strings.Contains(r.stderr, "repository lib of team:main has no git worktrees") {
		t.Errorf("integrate --repo lib: exit %d, stderr %q", r.code, r.stderr)
	}

	// No checks: the planner's integration waits for a person.
	c.ok("send", "lead@team", "integrate alice's app work")
	q := c.pendingApproval("lead@team")
	if !strings.HasPrefix(q.Question, `worktree_integrate {"agent":"alice","repo":"app"}`) {
		t.Errorf("approval = %q, want the integration of alice's app branch", q.Question)
	}
	if now := gitE2E(t, app, "rev-parse", "main"); now != appBefore {
		t.Fatalf("app's main moved before the integration was approved")
	}
	c.ok("approve", q.ID)
	c.waitFor("the approved integration", func() bool { return strings.Contains(c.ok("peek", "@team"), "[lead] integrated") })
	if got := gitE2E(t, app, "show", "main:uses.txt"); got != "Hello()" {
		t.Errorf("app's main uses.txt = %q, want alice's Hello()", got)
	}
	if peek := c.ok("peek", "@team"); !strings.Contains(peek, "of repository app") {
		t.Errorf("the channel does not say which repository was integrated:\n%s", peek)
	}
}
