package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// saveFile replaces path atomically, the way editors save.
func saveFile(t testing.TB, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// waitWorkflow polls GET /workflows/{name}/{tag} until cond holds; the
// reload happens in the daemon's watcher.
func waitWorkflow(t testing.TB, th *testHost, target api.Target, what string, cond func(api.Workflow, []api.Agent) bool) api.Workflow {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		w, err := th.client().GetWorkflow(context.Background(), target)
		if err != nil {
			t.Fatal(err)
		}
		var agents []api.Agent
		for _, name := range w.Agents {
			a, err := th.client().GetAgent(context.Background(), api.Target{Agent: name, Workflow: target.Workflow, Tag: target.Tag})
			if err == nil {
				agents = append(agents, a)
			}
		}
		if cond(w, agents) {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow never showed %s: %+v %+v", what, w, agents)
		}
		time.Sleep(50 * time.Millisecond) // the watcher debounces edits
	}
}

func agentIn(agents []api.Agent, name string) *api.Agent {
	for i := range agents {
		if agents[i].Name == name {
			return &agents[i]
		}
	}
	return nil
}

const teamV1 = `name: team
agents:
  alice:
    backend: mock
    system_prompt: You are alice, version one.
  bob:
    backend: mock
    system_prompt: You are bob.
`

func TestWorkflowHotReload(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	dir := t.TempDir()
	file := filepath.Join(dir, "team.yaml")
	saveFile(t, file, teamV1)
	ctx := context.Background()
	w, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file})
	if err != nil {
		t.Fatal(err)
	}
	target := api.Target{Workflow: w.Name, Tag: w.Tag}
	// Leave alice a message that must survive every reload.
	kept, err := th.team.Send(ctx, team.SendRequest{Scope: store.Scope{Workflow: "team", Tag: "main"}, From: "bob", Content: "@alice keep this"})
	if err != nil {
		t.Fatal(err)
	}

	// Add carol, change alice's prompt, remove bob: one edit.
	saveFile(t, file, `name: team
agents:
  alice:
    backend: mock
    system_prompt: You are alice, version two.
  carol:
    backend: mock
`)
	waitWorkflow(t, th, target, "carol added, alice changed, bob stopped", func(w api.Workflow, as []api.Agent) bool {
		a, b, c := agentIn(as, "alice"), agentIn(as, "bob"), agentIn(as, "carol")
		return a != nil && a.System == "You are alice, version two." && b != nil && b.State == "stopped" && c != nil && c.State != "stopped"
	})

	// An invalid edit keeps the last good config and says where it is wrong.
	saveFile(t, file, "name: team\nagents:\n  alice:\n    backend: mock\n    system_prompt: [unclosed\n")
	w = waitWorkflow(t, th, target, "the reload error", func(w api.Workflow, _ []api.Agent) bool { return w.Error != "" })
	if !strings.Contains(w.Error, "team.yaml:") || !strings.Contains(w.Error, "last good config") {
		t.Errorf("reload error = %q", w.Error)
	}
	if h, err := th.client().Health(ctx); err != nil || !strings.Contains(strings.Join(h.Problems, "\n"), "team.yaml:") {
		t.Errorf("status problems = %q, %v", h.Problems, err)
	}
	if a, err := th.client().GetAgent(ctx, api.Target{Agent: "carol", Workflow: "team", Tag: "main"}); err != nil || a.State == "stopped" {
		t.Errorf("after an invalid edit carol is %s, %v; want her kept", a.State, err)
	}

	// Fixing the file applies it and clears the error; a vim-style save
	// (rename the old file away, write a new one) works too.
	if err := os.Rename(file, file+"~"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(teamV1), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(file + "~")
	waitWorkflow(t, th, target, "the fixed config", func(w api.Workflow, as []api.Agent) bool {
		a, b, c := agentIn(as, "alice"), agentIn(as, "bob"), agentIn(as, "carol")
		return w.Error == "" && a != nil && a.System == "You are alice, version one." && b != nil && b.State != "stopped" && c != nil && c.State == "stopped"
	})
	// alice's message was never lost: it is unread, or a run of hers that
	// succeeded was shown it.
	alice := store.AgentKey{Name: "alice", Workflow: "team", Tag: "main"}
	d, err := th.DB().InboxDepth(ctx, alice)
	if err != nil {
		t.Fatalf("alice's inbox depth: %v", err)
	}
	handled := false
	runs, err := th.DB().ListRuns(ctx, store.RunFilter{Agent: alice})
	if err != nil {
		t.Fatalf("alice's runs: %v", err)
	}
	for _, r := range runs {
		handled = handled || (r.State == api.RunSucceeded && r.InboxUntilSeq >= kept.Seq)
	}
	if d != 1 && !handled {
		t.Errorf("alice's message was lost by the reloads: depth %d, runs %+v", d, runs)
	}

	// Deleting the file leaves the workflow running with a warning.
	os.Remove(file)
	w = waitWorkflow(t, th, target, "the missing-file warning", func(w api.Workflow, _ []api.Agent) bool { return strings.Contains(w.Error, "gone") })
	if w.State != "running" {
		t.Errorf("workflow with a deleted file is %s", w.State)
	}
}

func TestTwoTagsRunIsolated(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	dir := t.TempDir()
	file := filepath.Join(dir, "pair.yaml")
	saveFile(t, file, `name: pair
agents:
  writer:
    backend: mock
    config: {script: [{tool: team_doc_write, args: {content: "written in {{tag}}"}}]}
kickoff: "@writer go (${{ workflow.tag }})"
`)
	ctx := context.Background()
	for _, tag := range []string{"one", "two"} {
		if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file, Tag: tag}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file, Tag: "one"}); api.ErrorCode(err) != api.CodeConflict {
		t.Errorf("starting a running tag again: %v", err)
	}
	for _, tag := range []string{"one", "two"} {
		target := api.Target{Workflow: "pair", Tag: tag}
		waitWorkflow(t, th, target, tag+" idle", func(w api.Workflow, _ []api.Agent) bool {
			return w.Progress != nil && w.Progress.Idle && w.Progress.Runs > 0
		})
		b, err := os.ReadFile(filepath.Join(dir, ".workflow", "pair", tag, "documents", "notes.md"))
		if err != nil || string(b) != "written in "+tag {
			t.Errorf("%s's notes.md = %q, %v", tag, b, err)
		}
		ms, err := th.client().Peek(ctx, "@pair:"+tag, 10, 0)
		if err != nil || len(ms) != 1 || ms[0].Content != "@writer go ("+tag+")" {
			t.Errorf("%s's channel = %+v, %v", tag, ms, err)
		}
	}
}

func TestStartedWorkflowResumesAfterRestart(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	th, plugins := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { c.Home = home })
	dir := t.TempDir()
	file := filepath.Join(dir, "team.yaml")
	saveFile(t, file, teamV1)
	ctx := context.Background()
	if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	th.stop(t)

	th2 := startHostWith(t, Config{Home: home, Listen: "127.0.0.1:0", PluginsDirs: []string{plugins}})
	ev := watchEvents(t, th2)
	target := api.Target{Workflow: "team", Tag: "main"}
	if w, err := th2.client().GetWorkflow(ctx, target); err != nil || w.State != "running" {
		t.Fatalf("after restart: %+v, %v", w, err)
	}
	// Its agents are scheduled again...
	if _, err := th2.client().Send(ctx, api.SendRequest{Target: "alice@team", Message: "still there?"}); err != nil {
		t.Fatal(err)
	}
	ev.next("alice to run", runOf(team.EventRunFinished, "alice"))
	// ...and its file is watched again.
	saveFile(t, file, strings.Replace(teamV1, "version one", "version three", 1))
	waitWorkflow(t, th2, target, "the edit after restart", func(w api.Workflow, as []api.Agent) bool {
		a := agentIn(as, "alice")
		return a != nil && a.System == "You are alice, version three."
	})
}

// An edit that widens what runs may do and changes other things waits
// whole: nothing of it applies (not even the new prompt), the workflow
// says why, and the accept applies all of it. An edit that goes back to
// the running version withdraws it.
func TestWorkflowWideningEditWaitsWhole(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	file := filepath.Join(t.TempDir(), "team.yaml")
	saveFile(t, file, teamV1)
	ctx := context.Background()
	w, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file})
	if err != nil {
		t.Fatal(err)
	}
	target := api.Target{Workflow: w.Name, Tag: w.Tag}
	wider := strings.Replace(teamV1, "You are alice, version one.\n", "You are alice, version two.\n    env: {TOKEN: x}\n", 1)
	saveFile(t, file, wider)
	w = waitWorkflow(t, th, target, "the edit waiting", func(w api.Workflow, _ []api.Agent) bool { return w.Pending != nil })
	if got := strings.Join(w.Pending.Widens, "\n"); got != "agent alice: env adds TOKEN" {
		t.Errorf("the edit widens by %q, want the env variable", got)
	}
	if a, err := th.client().GetAgent(ctx, api.Target{Agent: "alice", Workflow: "team", Tag: "main"}); err != nil || a.System != "You are alice, version one." {
		t.Errorf("alice = %q, %v: part of the waiting edit applied", a.System, err)
	}

	saveFile(t, file, teamV1) // undone: nothing waits any more
	waitWorkflow(t, th, target, "the edit withdrawn", func(w api.Workflow, _ []api.Agent) bool { return w.Pending == nil })
	if _, err := th.client().AcceptWorkflow(ctx, target); api.ErrorCode(err) != api.CodeConflict {
		t.Errorf("accept with nothing waiting: %v, want a conflict", err)
	}

	saveFile(t, file, wider)
	waitWorkflow(t, th, target, "the edit waiting again", func(w api.Workflow, _ []api.Agent) bool { return w.Pending != nil })
	if w, err = th.client().AcceptWorkflow(ctx, target); err != nil || w.Pending != nil {
		t.Fatalf("accept: %+v, %v", w.Pending, err)
	}
	a, err := th.client().GetAgent(ctx, api.Target{Agent: "alice", Workflow: "team", Tag: "main"})
	if err != nil || a.System != "You are alice, version two." || a.Config.Env["TOKEN"] != "x" {
		t.Errorf("after accept alice = %q, env %v, %v; want all of the edit", a.System, a.Config.Env, err)
	}
}
