package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// queueCheckScript is the project's check in the merge queue tests: each
// agent's part is worth 1 and the parts may add up to 2 at most, so any
// one or two pass and all three together are forbidden. With a .hold file
// in the tree it first waits for a .go file beside it (the restart test
// holds a check there).
const queueCheckScript = `#!/bin/sh
if [ -f .hold ]; then : > .started; while [ ! -f .go ]; do sleep 0.05; done; fi
total=$(cat parts/* 2>/dev/null | awk '{s+=$1} END {print s+0}')
echo "the parts add up to $total"
if [ "$total" -ge 3 ]; then echo "forbidden: the parts add up to $total, at most 2 may" >&2; exit 1; fi
`

// queueRepo is a repository on main with check.sh (queueCheckScript
// unless files has one) and files committed,
// and team.yaml beside it (ignored) whose agents each commit a part when
// told "start your part" (parts maps each agent to path=value) and
// whose workspace checks with sh check.sh.
func queueRepo(t *testing.T, files map[string]string, parts map[string]string) (repo, file string) {
	t.Helper()
	repo = newRepoE2E(t)
	if _, ok := files["check.sh"]; !ok {
		files["check.sh"] = queueCheckScript
	}
	files[".gitignore"] = ".workflow/\nteam.yaml\n"
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		gitE2E(t, repo, "add", name)
	}
	gitE2E(t, repo, "commit", "-q", "-m", "the project and its check")
	yml := "name: team\nworkspace: {git: worktree, base: main, checks: [\"sh check.sh\"], check_timeout: 1m, batch: 4}\nagents:\n"
	var mentions []string
	for _, agent := range []string{"alice", "bob", "carol", "dave"} {
		part, ok := parts[agent]
		if !ok {
			continue
		}
		path, value, _ := strings.Cut(part, "=")
		mentions = append(mentions, "@"+agent)
		yml += fmt.Sprintf(`  %s:
    backend: mock
    config:
      script:
        - shell: "mkdir -p parts && echo %s > %s && git add parts && git -c user.name=%s -c user.email=%s@example.com commit -qm '%s adds a part'"
          when: {text: "start your part"}
        - result: done
`, agent, value, path, agent, agent, agent)
	}
	yml += fmt.Sprintf("kickoff: \"%s start your part\"\n", strings.Join(mentions, " "))
	file = filepath.Join(repo, "team.yaml")
	if err := os.WriteFile(file, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	return repo, file
}

// queueOf is `worktree queue @team [--all] --json`.
func (c *cli) queueOf(all bool) []api.QueueEntry {
	c.t.Helper()
	args := []string{"worktree", "queue", "@team", "--json"}
	if all {
		args = append(args, "--all")
	}
	var l api.QueueList
	if err := json.Unmarshal([]byte(c.ok(args...)), &l); err != nil {
		c.t.Fatal(err)
	}
	return l.Entries
}

// waitForCommits waits until each agent has committed its part.
func (c *cli) waitForCommits(agents ...string) {
	c.t.Helper()
	c.waitFor(strings.Join(agents, ", ")+" to commit", func() bool {
		var l api.WorktreeList
		if err := json.Unmarshal([]byte(c.ok("worktree", "list", "@team", "--json")), &l); err != nil {
			return false
		}
		ahead := 0
		for _, w := range l.Worktrees {
			if w.Ahead == 1 {
				ahead++
			}
		}
		return ahead == len(agents)
	})
}

// checkMain runs the project's check on every commit of main, as a user
// auditing the queue would, and returns how many there are.
func checkMain(t *testing.T, repo string) int {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "audit")
	gitE2E(t, repo, "worktree", "add", "--detach", "-q", dir, "main")
	revs := strings.Fields(gitE2E(t, repo, "rev-list", "main"))
	for _, rev := range revs {
		gitE2E(t, dir, "checkout", "-q", "--detach", rev)
		cmd := exec.Command("sh", "check.sh")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("main holds %s, whose check fails: %v\n%s", rev, err, out)
		}
	}
	gitE2E(t, repo, "worktree", "remove", "--force", dir)
	return len(revs)
}

// The merge queue end to end, on a real repository and daemon with mock
// agents that commit in parallel: four branches are queued while the team
// is paused; on resume one batch is merged, dave's conflicts with alice's
// and fails alone naming the file, the rest fails the check together, the
// bisection lands alice's and bob's and fails carol's, whose message
// carries the check's output to her; main never holds a commit whose
// check fails.
func TestE2EMergeQueue(t *testing.T) {
	t.Parallel()
	repo, file := queueRepo(t, map[string]string{"README": "parts\n"},
		map[string]string{"alice": "parts/alice=1", "bob": "parts/bob=1", "carol": "parts/carol=1", "dave": "parts/alice=2"})
	c := newCLI(t)
	c.startDaemon()
	c.ok("start", file, "--background")
	c.waitForCommits("alice", "bob", "carol", "dave")
	c.ok("pause", "@team")
	for i, agent := range []string{"alice", "bob", "dave", "carol"} {
		out := c.ok("worktree", "integrate", agent+"@team")
		if want := fmt.Sprintf("queued aw/team/main/%s for main as mq-%d (%d ahead of it)", agent, i+1, i); !strings.HasPrefix(out, want) {
			t.Errorf("integrate %s printed %q, want %q", agent, out, want)
		}
	}
	if r := c.run("worktree", "integrate", "bob@team"); r.code != api.ExitConflict || !strings.Contains(r.stderr, "as mq-2 (queued)") {
		t.Errorf("integrating bob twice: exit %d, %q", r.code, r.stderr)
	}
	out := c.ok("worktree", "queue", "@team")
	for _, want := range []string{"ID", "STATE", "mq-1  queued", "alice@team:main", "aw/team/main/carol", "3 ahead"} {
		if !strings.Contains(out, want) {
			t.Errorf("worktree queue lacks %q:\n%s", want, out)
		}
	}
	if out := c.ok("worktree", "list", "@team"); !strings.Contains(out, "mq-4 queued") {
		t.Errorf("worktree list does not show carol's entry:\n%s", out)
	}
	if got := gitE2E(t, repo, "log", "-1", "--format=%s", "main"); got != "the project and its check" {
		t.Fatalf("main moved while the team was paused: %q", got)
	}

	c.ok("resume", "@team")
	c.waitFor("the queue to empty", func() bool { return len(c.queueOf(false)) == 0 })
	states := map[string]api.QueueEntry{}
	for _, e := range c.queueOf(true) {
		states[e.Agent] = e
	}
	for agent, want := range map[string]api.QueueState{"alice": api.QueueLanded, "bob": api.QueueLanded, "carol": api.QueueFailed, "dave": api.QueueFailed} {
		if got := states[agent]; got.State != want {
			t.Errorf("%s's entry is %s (%s), want %s", agent, got.State, got.Reason, want)
		}
	}
	if d := states["dave"]; len(d.Files) != 1 || d.Files[0] != "parts/alice" || d.Command != "" {
		t.Errorf("dave's entry = %+v, want a conflict on parts/alice", d)
	}
	carol := states["carol"]
	if carol.Command != "sh check.sh" || !strings.Contains(carol.Output, "forbidden: the parts add up to 3") || !strings.Contains(carol.Reason, "mq-1, mq-2 merged ahead of it") {
		t.Errorf("carol's entry = %+v", carol)
	}
	show := c.ok("worktree", "queue", "show", carol.ID)
	for _, want := range []string{"mq-4: carol@team:main's branch aw/team/main/carol into main", "state:    failed", "check 1: `sh check.sh` on mq-1 + mq-2 + mq-4: exit 1", "  | forbidden: the parts add up to 3"} {
		if !strings.Contains(show, want) {
			t.Errorf("queue show lacks %q:\n%s", want, show)
		}
	}
	for _, bad := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"worktree", "queue", "show", "mq-99"}, api.ExitNotFound, `no merge queue entry "mq-99"`},
		{[]string{"worktree", "dequeue", "mq-99"}, api.ExitNotFound, `no merge queue entry "mq-99"`},
		{[]string{"worktree", "dequeue", "mq-1"}, api.ExitConflict, "mq-1 is landed"},
		{[]string{"worktree", "queue", "alice@team"}, api.ExitUsage, "takes a workflow (@team), not an agent"},
		{[]string{"worktree", "queue", "@nope"}, api.ExitNotFound, "no workflow @nope"},
	} {
		if r := c.run(bad.args...); r.code != bad.code || !strings.Contains(r.stderr, bad.says) {
			t.Errorf("%s: exit %d, %q; want %d saying %q", strings.Join(bad.args, " "), r.code, r.stderr, bad.code, bad.says)
		}
	}

	// What reached the team: a line per outcome, carol's mentioning her
	// with the check's output, which her next run was shown.
	channel := c.ok("peek", "@team", "-n", "100")
	for _, want := range []string{"mq-1 landed on main as commit", "mq-2 landed on main as commit", "@dave mq-3 failed", "conflicts in 1 file: parts/alice",
		"@carol mq-4 failed", "the check `sh check.sh` exited with status 1", "forbidden: the parts add up to 3"} {
		if !strings.Contains(channel, want) {
			t.Errorf("the channel lacks %q:\n%s", want, channel)
		}
	}
	c.waitFor("carol to read the failure", func() bool {
		runs := c.agent("carol@team").Runs
		return len(runs) >= 2 && runs[0].State == api.RunSucceeded && strings.Contains(c.ok("logs", runs[0].ID), "forbidden: the parts add up to 3")
	})

	if got := gitE2E(t, repo, "log", "--first-parent", "--format=%s", "main"); got != "Merge branch 'aw/team/main/bob' into main\nMerge branch 'aw/team/main/alice' into main\nthe project and its check" {
		t.Errorf("main's history:\n%s", got)
	}
	if got := gitE2E(t, repo, "status", "--porcelain"); got != "" {
		t.Errorf("the user's checkout after the queue: %q", got)
	}
	if n := checkMain(t, repo); n != 5 {
		t.Errorf("main has %d commits, want 5 (the first, two parts, two merges)", n)
	}
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatal(err)
	}
	for labels, want := range map[string]float64{`state="landed",workflow="team"`: 2, `state="failed",workflow="team"`: 2} {
		if got := metricValue(t, d, "agent_worker_merge_queue_entries_total", labels); got != want {
			t.Errorf("agent_worker_merge_queue_entries_total{%s} = %v, want %v", labels, got, want)
		}
	}
	if got := metricValue(t, d, "agent_worker_merge_queue_check_duration_seconds_count", `outcome="error",workflow="team"`); got != 1 {
		t.Errorf("failed checks counted: %v, want 1", got)
	}
}

// A daemon killed with SIGKILL while the queue runs a check: the next one
// checks the batch again and lands it once.
func TestE2EMergeQueueResumesAfterSIGKILL(t *testing.T) {
	t.Parallel()
	repo, file := queueRepo(t, map[string]string{".hold": "the check waits for .go\n"}, map[string]string{"alice": "parts/alice=1"})
	c := newCLI(t)
	daemon := c.startDaemon()
	c.ok("start", file, "--background")
	c.waitForCommits("alice")
	c.ok("worktree", "integrate", "alice@team")
	scratch := filepath.Join(c.home, "worktrees", "team", "main", ".merge-queue")
	c.waitFor("the check to start", func() bool { _, err := os.Stat(filepath.Join(scratch, ".started")); return err == nil })
	if e := c.queueOf(false); len(e) != 1 || e[0].State != api.QueueChecking {
		t.Fatalf("queue while the check runs: %+v", e)
	}
	if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	daemon.Wait()
	if err := os.Remove(filepath.Join(scratch, ".started")); err != nil {
		t.Fatal(err)
	}

	c.startDaemon()
	c.waitFor("the check to start again", func() bool { _, err := os.Stat(filepath.Join(scratch, ".started")); return err == nil })
	if err := os.WriteFile(filepath.Join(scratch, ".go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the queue to empty", func() bool { return len(c.queueOf(false)) == 0 })
	es := c.queueOf(true)
	if len(es) != 1 || es[0].State != api.QueueLanded || es[0].Attempts != 2 {
		t.Fatalf("entries after the restart: %+v", es)
	}
	if n := strings.Count(gitE2E(t, repo, "log", "--format=%s", "main"), "Merge branch 'aw/team/main/alice'"); n != 1 {
		t.Errorf("alice's branch was merged %d times", n)
	}
	if got := gitE2E(t, repo, "rev-parse", "main"); got != es[0].Commit {
		t.Errorf("main is at %s, the entry landed %s", got, es[0].Commit)
	}
	show := c.ok("worktree", "queue", "show", es[0].ID)
	if !strings.Contains(show, "state:    landed (attempt 2)") || !strings.Contains(show, "the parts add up to 1") {
		t.Errorf("queue show after the restart:\n%s", show)
	}
}

// leaverCheckScript is a check that, with .hold in the tree, records its
// shell's pid, starts a child in its background (.plain) and one that
// leaves its process group and session (.child: setsid, as a test server
// might), recorded once they run sleep, then waits for .go; every run says whether it could read the daemon's
// home (daemon.json and the database, four levels up from the scratch
// worktree) and passes.
const leaverCheckScript = `#!/bin/sh
if [ -f .hold ]; then
  echo $$ > .shell
  sleep 300 </dev/null >/dev/null 2>&1 &
  echo $! > .plain
  setsid sh -c 'exec sleep 300' </dev/null >/dev/null 2>&1 &
  child=$!
  while [ "$(cat /proc/$child/comm 2>/dev/null)" != sleep ]; do sleep 0.01; done
  echo $child > .child
  : > .started; while [ ! -f .go ]; do sleep 0.05; done
fi
for f in daemon.json agent-worker.db; do
  if cat ../../../../$f >/dev/null 2>&1; then echo "$f: read"; else echo "$f: refused"; fi
done
`

// A merge queue check is confined and dies with its daemon (issue 40,
// item 4): the check cannot read the daemon's home; a daemon killed with
// SIGKILL mid-check takes the check and its child with it, and the next
// daemon kills the child that left the check's session before it checks
// again in the same scratch worktree, then lands the entry; nothing any
// check started is left running. With cgroups (each check in its own)
// and without (the check's processes found by their marker).
func TestE2EMergeQueueCheckDiesWithTheDaemon(t *testing.T) {
	needLandlock(t)
	t.Parallel()
	for name, env := range map[string][]string{"cgroups": nil, "no cgroups": {testNoCgroups + "=disabled by the test"}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, file := queueRepo(t, map[string]string{".hold": "the check waits for .go\n", "check.sh": leaverCheckScript}, map[string]string{"alice": "parts/alice=1"})
			c := newCLI(t)
			if env == nil {
				// Its daemons in a cgroup of their own, so that no other
				// test's daemon sweeps the killed one's checks first.
				if c.daemonAttr = privateCgroup(t); c.daemonAttr == nil {
					t.Skip("this machine gives the daemon no cgroup v2: the other subtest covers the checks without")
				}
			}
			daemon := c.startDaemon(env...)
			c.ok("start", file, "--background")
			c.waitForCommits("alice")
			c.ok("worktree", "integrate", "alice@team")
			scratch := filepath.Join(realPath(t, c.home), "worktrees", "team", "main", ".merge-queue")
			pidIn := func(name string) int {
				b, _ := os.ReadFile(filepath.Join(scratch, name))
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				return pid
			}
			c.waitFor("the check to start", func() bool { _, err := os.Stat(filepath.Join(scratch, ".started")); return err == nil })
			shell, plain, child := pidIn(".shell"), pidIn(".plain"), pidIn(".child")
			if processGone(shell) || processGone(plain) || processGone(child) {
				t.Fatalf("the check's shell %d or children %d, %d are not running", shell, plain, child)
			}
			if p, ok := testkit.ReadProc(child); !ok || p.PGID == shell {
				t.Fatalf("the check's child %d did not leave the check's process group: %+v", child, p)
			}

			// Read before the kill: a pid the kernel reuses afterwards is
			// another process, not the check still running.
			shellProc, _ := testkit.ReadProc(shell)
			plainProc, _ := testkit.ReadProc(plain)
			if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = daemon.Wait()
			c.waitFor(fmt.Sprintf("the check %d and its child %d to die with the daemon", shell, plain), func() bool { return testkit.Ended(shellProc) && testkit.Ended(plainProc) })
			if err := os.Remove(filepath.Join(scratch, ".started")); err != nil {
				t.Fatal(err)
			}

			c.startDaemon(env...)
			c.waitFor("the check to start again", func() bool { _, err := os.Stat(filepath.Join(scratch, ".started")); return err == nil })
			if !processGone(child) { // killed before the check began, not after
				t.Fatalf("the check ran again beside the child %d of the killed daemon's check", child)
			}
			second := []int{pidIn(".shell"), pidIn(".plain"), pidIn(".child")}
			if err := os.WriteFile(filepath.Join(scratch, ".go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			c.waitFor("the queue to empty", func() bool { return len(c.queueOf(false)) == 0 })
			es := c.queueOf(true)
			if len(es) != 1 || es[0].State != api.QueueLanded || es[0].Attempts != 2 {
				t.Fatalf("entries after the restart: %+v", es)
			}
			c.waitFor(fmt.Sprintf("the second check's processes %v to end with it", second), func() bool {
				return processGone(second[0]) && processGone(second[1]) && processGone(second[2])
			})
			show := c.ok("worktree", "queue", "show", es[0].ID)
			for _, want := range []string{"daemon.json: refused", "agent-worker.db: refused"} {
				if !strings.Contains(show, want) {
					t.Errorf("the check could read the daemon's home (want %q):\n%s", want, show)
				}
			}
		})
	}
}
