package host

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// gitIn runs git in dir for a test and returns its trimmed output.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitRepo makes a repository on main with one commit, and the identity
// merge commits take; tests skip, saying why, where git is missing.
func gitRepo(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("worktree tests need the git program, which is not installed: %v", err)
	}
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "config", "user.name", "Test")
	gitIn(t, dir, "config", "user.email", "test@example.com")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The workflow's documents folder stays out of the user's status.
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(".workflow/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "README", ".gitignore")
	gitIn(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// shellCommit is a mock script step that shows where it runs, writes
// file and commits it as its agent (content without quotes).
func shellCommit(file, content string) string {
	return `{shell: "pwd; git rev-parse --abbrev-ref HEAD; printf '` + content + `' > ` + file + ` && git add ` + file +
		` && git -c user.name={{name}} -c user.email={{name}}@example.com commit -qm '{{name}} writes ` + file + `'"}`
}

// runText is everything run id printed as text.
func runText(t testing.TB, th *testHost, id string) string {
	t.Helper()
	d, err := th.client().GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range d.Events {
		if e.Kind == "text" {
			var ev struct{ Text string }
			_ = json.Unmarshal(e.Data, &ev)
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

// lastRunOf is the newest run of agent (a full target).
func lastRunOf(t testing.TB, th *testHost, agent string) api.Run {
	t.Helper()
	runs, err := th.client().Runs(context.Background(), api.RunQuery{Target: agent})
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs of %s: %+v, %v", agent, runs, err)
	}
	return runs[0]
}

// systemLines are the channel's lines from the daemon.
func systemLines(t testing.TB, th *testHost, scope string) []string {
	t.Helper()
	ms, err := th.client().Peek(context.Background(), scope, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		if m.Kind == "system" {
			out = append(out, m.Content)
		}
	}
	return out
}

// worktreeTeam's lead integrates on its own: without checks, a git
// workspace's worktree_integrate would wait for a person (issue 45), so
// the team opts out.
const worktreeTeam = `name: team
workspace: {git: worktree, base: main}
approvals: {integrate: false}
agents:
  alice:
    backend: mock
    config: {script: [%ALICE%, {result: "alice done"}]}
  bob:
    backend: mock
    config: {script: [%BOB%, {result: "bob done"}]}
  lead:
    backend: mock
    can_spawn: true
kickoff: "@alice @bob write your parts"
`

// startWorktreeTeam writes the team's file into a fresh repository with
// alice's and bob's script steps, starts it and waits for both runs.
func startWorktreeTeam(t *testing.T, th *testHost, alice, bob string) string {
	t.Helper()
	repo := gitRepo(t)
	file := filepath.Join(repo, "team.yaml")
	saveFile(t, file, strings.NewReplacer("%ALICE%", alice, "%BOB%", bob).Replace(worktreeTeam))
	ev := watchEvents(t, th)
	if _, err := th.client().StartWorkflow(context.Background(), api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	for len(done) < 2 {
		e := ev.next("alice's and bob's first runs", func(e team.Event) bool {
			return e.Kind == team.EventRunFinished || e.Kind == team.EventRunFailed
		})
		if e.Kind == team.EventRunFailed {
			t.Fatalf("%s's run failed: %+v", e.Agent.Name, e.Run)
		}
		done[e.Agent.Name] = true
	}
	return repo
}

// Each agent runs in its own worktree on its own branch, made before its
// first run; a planner merges their commits into main, and the user's
// checkout of main follows without showing anything changed.
func TestWorktreePerAgentAndIntegrate(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	repo := startWorktreeTeam(t, th, shellCommit("a.txt", "from alice"), shellCommit("b.txt", "from bob"))
	ctx := context.Background()

	for _, name := range []string{"alice", "bob"} {
		dir := filepath.Join(th.home, "worktrees", "team", "main", name)
		text := runText(t, th, lastRunOf(t, th, name+"@team").ID)
		if want := dir + "\naw/team/main/" + name + "\n"; !strings.HasPrefix(text, want) {
			t.Errorf("%s's shell step printed %q, want it to start with %q (its worktree and branch)", name, text, want)
		}
	}
	if got := gitIn(t, repo, "status", "--porcelain"); got != "?? team.yaml" {
		t.Errorf("the user's tree after the runs: %q, want only the untracked workflow file", got)
	}
	if got := gitIn(t, repo, "log", "--format=%s", "aw/team/main/alice"); got != "alice writes a.txt\nfirst" {
		t.Errorf("alice's branch: %q", got)
	}

	lead, bob := th.join(t, "lead@team"), th.join(t, "bob@team")
	st := lead.ok("worktree_status", nil)
	if n, _ := st["count"].(float64); n != 3 {
		t.Fatalf("worktree_status = %v, want alice, bob and lead", st)
	}
	for _, w := range st["worktrees"].([]any) {
		m := w.(map[string]any)
		want := map[string]any{"alice": "active", "bob": "active", "lead": "none"}[m["agent"].(string)]
		if m["state"] != want || (m["agent"] != "lead" && m["ahead"] != 1.0) {
			t.Errorf("worktree %v: state %v ahead %v, want %v", m["agent"], m["state"], m["ahead"], want)
		}
	}
	before := gitIn(t, repo, "rev-parse", "main")
	bob.fails("worktree_integrate", map[string]any{"agent": "alice"}, "bob may not integrate worktrees: only the user and agents with can_spawn: true may")
	bob.fails("worktree_discard", map[string]any{"agent": "alice", "reason": "mine now"}, "bob may not discard worktrees")
	if gitIn(t, repo, "rev-parse", "main") != before {
		t.Fatal("a refused integrate moved main")
	}

	res := lead.ok("worktree_integrate", map[string]any{"agent": "alice"})
	if res["merged"] != true || res["target"] != "main" {
		t.Errorf("integrate alice = %v", res)
	}
	status, e, body := th.call(t, "POST", "/worktrees/bob@team/integrate", `{}`)
	if status != http.StatusOK {
		t.Fatalf("POST integrate bob: %d %+v", status, e)
	}
	var ir api.IntegrateResult
	if err := json.Unmarshal(body, &ir); err != nil || !ir.Merged || len(ir.Files) != 1 || ir.Files[0] != "b.txt" {
		t.Errorf("integrate bob over HTTP = %s", body)
	}
	if got := gitIn(t, repo, "log", "--first-parent", "--format=%s", "main"); got != "Merge branch 'aw/team/main/bob' into main\nMerge branch 'aw/team/main/alice' into main\nfirst" {
		t.Errorf("main's first-parent history:\n%s", got)
	}
	if parents := strings.Fields(gitIn(t, repo, "log", "-1", "--format=%P", "main")); len(parents) != 2 {
		t.Errorf("main's head has parents %v, want a merge commit", parents)
	}
	// The user's checkout of main moved with it: the files are there and
	// nothing shows as changed.
	if got := gitIn(t, repo, "status", "--porcelain"); got != "?? team.yaml" {
		t.Errorf("the user's tree after integrating: %q", got)
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
			t.Errorf("the user's checkout lacks %s: %v", f, err)
		}
	}
	lines := systemLines(t, th, "@team")
	if len(lines) != 2 || !strings.Contains(lines[0], "integrated into main by lead") || !strings.Contains(lines[1], "integrated into main by user") {
		t.Errorf("system lines = %q", lines)
	}
	ws, err := th.client().Worktrees(ctx, "@team")
	if err != nil || len(ws) != 3 || ws[0].Agent != "alice" || ws[0].Ahead != 0 || ws[0].Behind != 3 {
		t.Errorf("GET /worktrees?target=@team = %+v, %v", ws, err)
	}
}

// A conflict leaves main untouched and names the files; discard refuses
// uncommitted changes unless forced.
func TestWorktreeConflictAndDiscard(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	repo := startWorktreeTeam(t, th, shellCommit("README", "alice was here"), shellCommit("README", "bob was here"))
	c := th.client()
	ctx := context.Background()
	alice, bob := api.Target{Agent: "alice", Workflow: "team", Tag: "main"}, api.Target{Agent: "bob", Workflow: "team", Tag: "main"}
	if _, err := c.Integrate(ctx, alice, api.IntegrateRequest{}); err != nil {
		t.Fatal(err)
	}
	before := gitIn(t, repo, "rev-parse", "main")
	_, err := c.Integrate(ctx, bob, api.IntegrateRequest{})
	if api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "conflicts in 1 file: README; main is unchanged") {
		t.Errorf("conflicting integrate: %v", err)
	}
	if gitIn(t, repo, "rev-parse", "main") != before || gitIn(t, repo, "status", "--porcelain") != "?? team.yaml" {
		t.Error("a conflicting integrate changed main or the user's tree")
	}
	lead := th.join(t, "lead@team")
	lead.fails("worktree_integrate", map[string]any{"agent": "bob"}, "conflicts in 1 file: README")

	dir := filepath.Join(th.home, "worktrees", "team", "main", "bob")
	if err := os.WriteFile(filepath.Join(dir, "wip.txt"), []byte("half done"), 0o644); err != nil {
		t.Fatal(err)
	}
	lead.fails("worktree_discard", map[string]any{"agent": "bob", "reason": "conflicts with alice"}, "1 uncommitted change (wip.txt): commit them, or discard with force")
	if _, err := os.Stat(filepath.Join(dir, "wip.txt")); err != nil {
		t.Fatalf("a refused discard lost the file: %v", err)
	}
	status, e, _ := th.call(t, "POST", "/worktrees/bob@team/discard", `{"reason": "conflicts with alice"}`)
	if status != http.StatusConflict || !strings.Contains(e.Message, "uncommitted change") {
		t.Errorf("HTTP discard without force: %d %+v", status, e)
	}
	res := lead.ok("worktree_discard", map[string]any{"agent": "bob", "reason": "conflicts with alice", "force": true})
	if res["branch"] != "aw/team/main/bob" || res["last_commit"] == "" {
		t.Errorf("discard = %v", res)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("bob's worktree is still there: %v", err)
	}
	if got := gitIn(t, repo, "branch", "--list", "aw/team/main/bob"); got != "" {
		t.Errorf("bob's branch is still there: %q", got)
	}
	if lines := systemLines(t, th, "@team"); len(lines) != 2 || !strings.Contains(lines[1], "bob's worktree and branch aw/team/main/bob were discarded by lead: conflicts with alice") {
		t.Errorf("system lines = %q", lines)
	}
}

// workspace: git in a directory that is no repository is refused at its
// line, as is a base branch that does not exist; nothing starts.
func TestWorktreeNeedsARepository(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	ctx := context.Background()
	plain := t.TempDir()
	file := filepath.Join(plain, "team.yaml")
	saveFile(t, file, "name: team\nagents:\n  alice: {backend: mock}\nworkspace: {git: worktree}\n")
	_, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file})
	want := file + ":4: workspace: git needs a git repository: " + plain + " is not one; run git init or remove workspace:"
	if api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(err.Error(), want) {
		t.Errorf("start outside a repository: %v\nwant %s", err, want)
	}
	if _, err := th.client().GetWorkflow(ctx, api.Target{Workflow: "team", Tag: "main"}); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("a refused workflow was stored: %v", err)
	}
	repo := gitRepo(t)
	file = filepath.Join(repo, "team.yaml")
	saveFile(t, file, "name: team\nagents:\n  alice: {backend: mock}\nworkspace:\n  git: worktree\n  base: develop\n")
	if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file}); err == nil || !strings.Contains(err.Error(), file+":4: workspace: base branch develop does not exist") {
		t.Errorf("start with a missing base: %v", err)
	}
	if _, err := th.client().Worktrees(ctx, "@global"); api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(err.Error(), "has no git workspace") {
		t.Errorf("worktrees of a workflow without a workspace: %v", err)
	}
}

// Worktrees survive a daemon restart and are used again; stopping the
// workflow removes a worktree whose branch is merged and keeps one with
// unmerged commits, which GET /worktrees lists as kept.
func TestWorktreeRestartAndCleanup(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	th, pluginsDir := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { c.Home = home })
	repo := startWorktreeTeam(t, th, shellCommit("a.txt", "from alice"), `{shell: "pwd"}`)
	aliceDir := filepath.Join(home, "worktrees", "team", "main", "alice")
	// An untracked file only survives if the worktree is used again, not
	// made again from the branch.
	if err := os.WriteFile(filepath.Join(aliceDir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	th.stop(t)

	th = startHostWith(t, Config{Home: home, Listen: "127.0.0.1:0", PluginsDirs: []string{pluginsDir}, RuntimeDir: testkit.ShortTempDir(t)})
	ctx := context.Background()
	ev := watchEvents(t, th)
	if _, err := th.client().Send(ctx, api.SendRequest{Target: "@team", Message: "@alice again; @lead have a look"}); err != nil {
		t.Fatal(err)
	}
	for done := map[string]bool{}; len(done) < 2; {
		done[ev.next("alice's and lead's runs after the restart", func(e team.Event) bool { return e.Kind == team.EventRunFinished }).Agent.Name] = true
	}
	// The same worktree: the script's commit fails there (a.txt holds
	// the same content already, nothing to commit), its pwd is the same.
	if text := runText(t, th, lastRunOf(t, th, "alice@team").ID); !strings.HasPrefix(text, aliceDir+"\naw/team/main/alice\n") {
		t.Errorf("alice's run after the restart printed %q", text)
	}
	if got := gitIn(t, repo, "log", "--format=%s", "aw/team/main/alice"); got != "alice writes a.txt\nfirst" {
		t.Errorf("alice's branch after the restart: %q", got)
	}
	if _, err := os.Stat(filepath.Join(aliceDir, "notes.txt")); err != nil {
		t.Errorf("alice's worktree was made again after the restart: %v", err)
	}
	if err := os.Remove(filepath.Join(aliceDir, "notes.txt")); err != nil {
		t.Fatal(err)
	}

	// `stop lead@team` removes the agent, and with it its worktree.
	leadDir := filepath.Join(home, "worktrees", "team", "main", "lead")
	if _, err := os.Stat(leadDir); err != nil {
		t.Fatalf("lead ran without a worktree: %v", err)
	}
	if err := th.client().DeleteAgent(ctx, api.Target{Agent: "lead", Workflow: "team", Tag: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leadDir); !os.IsNotExist(err) {
		t.Errorf("lead's worktree outlived lead: %v", err)
	}

	if err := th.client().StopWorkflow(ctx, api.Target{Workflow: "team", Tag: "main"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "worktrees", "team", "main", "bob")); !os.IsNotExist(err) {
		t.Errorf("bob's worktree (nothing unmerged) is still there: %v", err)
	}
	if got := gitIn(t, repo, "branch", "--list", "aw/*", "--format=%(refname:short)"); got != "aw/team/main/alice" {
		t.Errorf("branches after the stop: %q, want alice's alone", got)
	}
	ws, err := th.client().Worktrees(ctx, "")
	if err != nil || len(ws) != 1 || ws[0].Agent != "alice" || ws[0].State != api.WorktreeKept ||
		ws[0].KeptBecause != "1 commit not merged into main" || ws[0].Path != aliceDir {
		t.Errorf("GET /worktrees after the stop = %+v, %v", ws, err)
	}
	if got := gitIn(t, repo, "status", "--porcelain"); got != "?? team.yaml" {
		t.Errorf("the user's tree after the stop: %q", got)
	}
}

// A workflow stopped while a run is in flight lets the run end first; its
// worktree goes once it has (the cleanup hears the run's end).
func TestWorktreeRemovedWhenARunInFlightEnds(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	repo := gitRepo(t)
	file := filepath.Join(repo, "team.yaml")
	saveFile(t, file, "name: team\nworkspace: {git: worktree}\nagents:\n  alice:\n    backend: mock\n    config: {script: [{hang: true}]}\nkickoff: \"@alice go\"\n")
	ev := watchEvents(t, th)
	ctx := context.Background()
	if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	ev.next("alice's run to start", runOf(team.EventRunStarted, "alice"))
	dir := filepath.Join(th.home, "worktrees", "team", "main", "alice")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("alice runs without a worktree: %v", err)
	}
	if err := th.client().StopWorkflow(ctx, api.Target{Workflow: "team", Tag: "main"}, true); err != nil {
		t.Fatal(err)
	}
	ev.next("alice's run to end", runOf(team.EventRunFailed, "alice"))
	ev.next("alice's worktree to be removed", runOf(team.EventWorktree, "alice"))
	if got := gitIn(t, repo, "branch", "--list", "aw/*"); got != "" {
		t.Errorf("alice's branch is still there after her worktree was removed: %q", got)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("alice's worktree is still there after her run ended: %v", err)
	}
}

// An edit that breaks the workspace is rejected at its line, and the last
// good config (and its worktrees) keeps running.
func TestWorktreeBadEditRejected(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	repo := gitRepo(t)
	file := filepath.Join(repo, "team.yaml")
	const good = "name: team\nagents:\n  alice: {backend: mock}\nworkspace: {git: worktree}\n"
	saveFile(t, file, good)
	if _, err := th.client().StartWorkflow(context.Background(), api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	saveFile(t, file, strings.Replace(good, "{git: worktree}", "{git: worktree, base: nope}", 1))
	w := waitWorkflow(t, th, api.Target{Workflow: "team", Tag: "main"}, "the edit rejected", func(w api.Workflow, _ []api.Agent) bool {
		return w.Error != ""
	})
	if !strings.Contains(w.Error, "edit rejected") || !strings.Contains(w.Error, file+":4: workspace: base branch nope does not exist") || w.State != api.WorkflowRunning {
		t.Errorf("after a bad edit: %s, %q", w.State, w.Error)
	}
	ws, err := th.client().Worktrees(context.Background(), "@team")
	if err != nil || len(ws) != 1 || ws[0].Base != "main" {
		t.Errorf("worktrees after the rejected edit: %+v, %v", ws, err)
	}
}

// A helper that lead spawns in a git workspace runs in a worktree of its
// own on its own branch; agent_stop removes it, since it holds nothing
// unmerged.
func TestWorktreeOfASpawnedAgent(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	startWorktreeTeam(t, th, `{result: "alice idle"}`, `{result: "bob idle"}`)
	ev := watchEvents(t, th)
	lead := th.join(t, "lead@team")
	lead.ok("agent_spawn", map[string]any{"name": "helper", "system_prompt": "You help.", "backend": "mock"})
	if _, err := th.client().Send(context.Background(), api.SendRequest{Target: "@team", Message: "@helper hello"}); err != nil {
		t.Fatal(err)
	}
	ev.next("helper's first run", func(e team.Event) bool {
		return e.Kind == team.EventRunFinished && e.Agent.Name == "helper"
	})
	st := lead.ok("worktree_status", map[string]any{"agent": "helper"})
	wts, _ := st["worktrees"].([]any)
	if len(wts) != 1 || field(wts[0], "state") != "active" || field(wts[0], "branch") != "aw/team/main/helper" {
		t.Fatalf("worktree_status(helper) = %v", st)
	}
	path, _ := field(wts[0], "path").(string)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("helper's worktree %q: %v", path, err)
	}
	lead.ok("agent_stop", map[string]any{"name": "helper"})
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("helper's worktree %s after agent_stop: %v, want it removed", path, err)
	}
}
