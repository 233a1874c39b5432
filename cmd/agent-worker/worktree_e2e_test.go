package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// gitE2E runs git in dir for the test.
func gitE2E(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepoE2E makes a git repository on main with a user set, skipping
// the test where git is not installed.
func newRepoE2E(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("needs the git program, which is not installed: %v", err)
	}
	repo := t.TempDir()
	gitE2E(t, repo, "init", "-q", "-b", "main")
	gitE2E(t, repo, "config", "user.name", "Test")
	gitE2E(t, repo, "config", "user.email", "test@example.com")
	return repo
}

// The worktree commands end to end: `run` a team whose agents work in
// their own worktrees of a real repository; at its end the worktree with
// an unmerged commit is kept and listed, discard wants a reason and
// refuses uncommitted changes, integrate merges it into main (which the
// user's clean checkout follows), and nothing is left.
func TestE2EWorktreeListIntegrateDiscard(t *testing.T) {
	t.Parallel()
	repo := newRepoE2E(t)
	c := newCLI(t)
	file := filepath.Join(repo, "team.yaml")
	if err := os.WriteFile(file, []byte(`name: team
workspace: {git: worktree}
agents:
  alice:
    backend: mock
    config: {script: [{shell: "echo from alice > a.txt && git add a.txt && git -c user.name=alice -c user.email=a@example.com commit -qm 'alice adds a.txt'"}, {result: done}]}
  bob:
    backend: mock
    config: {script: [{shell: "git rev-parse --abbrev-ref HEAD"}, {result: done}]}
kickoff: "@alice @bob go"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".workflow/\nteam.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitE2E(t, repo, "add", ".gitignore")
	gitE2E(t, repo, "commit", "-q", "-m", "first")

	for _, cmd := range []string{"worktree", "worktree list", "worktree integrate", "worktree discard"} {
		if r := c.run(append(strings.Fields(cmd), "--help")...); r.code != 0 || !strings.Contains(r.stdout, "agent-worker "+cmd) {
			t.Errorf("%s --help: exit %d, stdout %q", cmd, r.code, r.stdout)
		}
	}
	if r := c.run("run", file, "--timeout", "60s"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// `run` stopped the workflow: bob's worktree (nothing committed) is
	// gone, alice's is kept.
	out := c.ok("worktree", "list")
	for _, want := range []string{"AGENT", "alice@team:main", "kept", "aw/team/main/alice", "1/0 main", "alice adds a.txt",
		"alice@team:main: kept, 1 commit not merged into main: `agent-worker worktree integrate alice@team:main`"} {
		if !strings.Contains(out, want) {
			t.Errorf("worktree list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "bob@") {
		t.Errorf("worktree list still shows bob:\n%s", out)
	}
	var l api.WorktreeList
	if err := json.Unmarshal([]byte(c.ok("worktree", "list", "@team", "--json")), &l); err != nil || len(l.Worktrees) != 1 || l.Worktrees[0].State != api.WorktreeKept {
		t.Fatalf("worktree list @team --json = %+v, %v", l, err)
	}
	dir := l.Worktrees[0].Path

	if r := c.run("worktree", "discard", "alice@team"); r.code != api.ExitUsage || !strings.Contains(r.stderr, "needs --reason") {
		t.Errorf("discard without a reason: exit %d, %q", r.code, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "draft.txt"), []byte("unsaved"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := c.run("worktree", "discard", "alice@team", "--reason", "not needed"); r.code != api.ExitConflict || !strings.Contains(r.stderr, "1 uncommitted change (draft.txt)") {
		t.Errorf("discard with an uncommitted change: exit %d, %q", r.code, r.stderr)
	}
	if err := os.Remove(filepath.Join(dir, "draft.txt")); err != nil {
		t.Fatal(err)
	}
	if r := c.run("worktree", "integrate", "nobody@team"); r.code != api.ExitNotFound {
		t.Errorf("integrate an agent without a branch: exit %d, %q", r.code, r.stderr)
	}
	if r := c.run("worktree", "list", "@nope"); r.code != api.ExitNotFound || !strings.Contains(r.stderr, "no workflow @nope") {
		t.Errorf("list of a missing workflow: exit %d, %q", r.code, r.stderr)
	}

	out = c.ok("worktree", "integrate", "alice@team")
	if !strings.HasPrefix(out, "merged aw/team/main/alice into main: commit ") || !strings.Contains(out, "1 file(s) changed") {
		t.Errorf("integrate printed %q", out)
	}
	if got := gitE2E(t, repo, "log", "-1", "--format=%s", "main"); got != "Merge branch 'aw/team/main/alice' into main" {
		t.Errorf("main's head: %q", got)
	}
	if got := gitE2E(t, repo, "status", "--porcelain"); got != "" {
		t.Errorf("the user's checkout after integrate: %q, want clean", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "a.txt")); err != nil {
		t.Errorf("the user's checkout of main lacks a.txt: %v", err)
	}
	// Merged, the kept worktree went with its branch.
	if out := c.ok("worktree", "list"); !strings.HasPrefix(out, "no worktrees") {
		t.Errorf("worktree list after integrate:\n%s", out)
	}
	if got := gitE2E(t, repo, "branch", "--list", "aw/*"); got != "" {
		t.Errorf("branches left: %q", got)
	}
}
