package host

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/scheduler"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/store"
)

// gateStep is a mock step that blocks until the test creates gate: the
// run is in flight exactly as long as the test wants.
func gateStep(gate string) map[string]any {
	return map[string]any{"shell": "while [ ! -e '" + gate + "' ]; do sleep 0.05; done"}
}

// restartPluginHost stops th and starts a daemon on its home again, with
// the plugins of dir and no inbox poll (as pluginHost with noPoll).
func restartPluginHost(t testing.TB, th *testHost, dir string) *testHost {
	t.Helper()
	th.stop(t)
	return startHostWith(t, Config{Home: th.home, Listen: "127.0.0.1:0", PluginsDirs: []string{dir}, RuntimeDir: testkit.ShortTempDir(t),
		Scheduler: scheduler.Config{PollInterval: time.Hour, RetryBase: 10 * time.Millisecond}})
}

func agentState(t testing.TB, th *testHost, name string) api.AgentState {
	t.Helper()
	a, err := th.DB().GetAgent(context.Background(), agentKey(name))
	if err != nil {
		t.Fatal(err)
	}
	return a.State
}

// A paused agent finishes the run in flight and stays paused; messages sent
// to it wait unread while an unpaused teammate handles later ones; the
// pause survives a daemon restart; resume runs the waiting message and
// acks it.
func TestPauseHoldsRunsUntilResume(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ev := watchEvents(t, th)
	ctx := context.Background()
	c := th.client()
	alice := api.Target{Agent: "alice", Workflow: "global", Tag: "main"}
	gate := filepath.Join(t.TempDir(), "go")
	mockAgent(t, th, "alice", gateStep(gate), map[string]any{"result": "alice saw {{inbox_summary}}"})
	mockAgent(t, th, "bob")

	// Paused during a run: the run finishes normally, the agent stays paused.
	if _, err := c.Send(ctx, api.SendRequest{Target: "alice", Message: "first"}); err != nil {
		t.Fatal(err)
	}
	ev.next("alice's first run", runOf(team.EventRunStarted, "alice"))
	if err := c.Pause(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ev.next("alice's first run to finish", runOf(team.EventRunFinished, "alice"))
	if r := lastRun(t, th, "alice"); r.State != "succeeded" {
		t.Errorf("the run in flight when paused = %+v, want succeeded", r)
	}
	if s := agentState(t, th, "alice"); s != api.AgentPaused {
		t.Errorf("alice after the run she was paused in = %s, want paused", s)
	}

	// Messages wait: bob, sent to later, runs; alice does not.
	held, err := c.Send(ctx, api.SendRequest{Target: "alice", Message: "second"})
	if err != nil {
		t.Fatal(err)
	}
	c.Send(ctx, api.SendRequest{Target: "bob", Message: "later"})
	ev.settled(th, "bob")
	if n, d := len(runsOf(t, th, "alice")), depth(t, th, "alice"); n != 1 || d != 1 {
		t.Errorf("paused alice: %d runs, inbox %d; want 1 run (before the pause) and 1 unread", n, d)
	}
	if a, err := c.GetAgent(ctx, alice); err != nil || a.State != "paused" {
		t.Errorf("GET /agents/alice state = %q, %v", a.State, err)
	}
	if _, err := c.Serve(ctx, api.RunRequest{Agent: "alice", Message: "now"}); api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "resume") {
		t.Errorf("serve on a paused agent: %v", err)
	}

	// The pause survives a restart: the restarted daemon starts no run.
	th = restartPluginHost(t, th, dir)
	ev = watchEvents(t, th)
	c = th.client()
	c.Send(ctx, api.SendRequest{Target: "bob", Message: "after the restart"})
	ev.settled(th, "bob")
	if s, n := agentState(t, th, "alice"), len(runsOf(t, th, "alice")); s != api.AgentPaused || n != 1 {
		t.Errorf("alice after a restart: %s with %d runs, want paused with 1", s, n)
	}

	// Resume runs what waited, and acks it.
	if err := c.Resume(ctx, alice); err != nil {
		t.Fatal(err)
	}
	ev.settled(th, "alice")
	runs := runsOf(t, th, "alice")
	if len(runs) != 2 || runs[0].State != api.RunSucceeded || runs[0].InboxUntilSeq != held.Seq {
		t.Errorf("alice's runs after resume = %+v, want a second that saw seq %d", runs, held.Seq)
	}
	if s := agentState(t, th, "alice"); s != api.AgentIdle {
		t.Errorf("alice after resume = %s", s)
	}

	// Bad input changes nothing.
	if err := c.Resume(ctx, alice); api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "nothing to resume") {
		t.Errorf("resume of an idle agent: %v", err)
	}
	if err := c.Pause(ctx, api.Target{Agent: "nobody", Workflow: "global", Tag: "main"}); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("pause of an unknown agent: %v", err)
	}
}

const pausedTeam = `name: crew
agents:
  alice:
    backend: mock
  bob:
    backend: mock
`

// Pausing a workflow holds every agent of it, through an edit of its file
// and a daemon restart; resuming it runs them all.
func TestPauseWorkflowHoldsEveryAgent(t *testing.T) {
	t.Parallel()
	th, dir := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ev := watchEvents(t, th)
	ctx := context.Background()
	c := th.client()
	file := filepath.Join(t.TempDir(), "crew.yaml")
	saveFile(t, file, pausedTeam)
	if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	crew := api.Target{Workflow: "crew", Tag: "main"}
	mockAgent(t, th, "witness")
	if err := c.Pause(ctx, crew); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, api.SendRequest{Target: "@crew", Message: "@alice @bob hello"}); err != nil {
		t.Fatal(err)
	}
	held := func(when string) {
		t.Helper()
		c.Send(ctx, api.SendRequest{Target: "witness", Message: when})
		ev.settled(th, "witness")
		for _, name := range []string{"alice", "bob"} {
			key := store.AgentKey{Name: name, Workflow: "crew", Tag: "main"}
			runs, err := th.DB().ListRuns(ctx, store.RunFilter{Agent: key})
			if err != nil {
				t.Fatalf("%s: runs of %s: %v", when, name, err)
			}
			d, err := th.DB().InboxDepth(ctx, key)
			if err != nil {
				t.Fatalf("%s: inbox depth of %s: %v", when, name, err)
			}
			if len(runs) != 0 || d != 1 {
				t.Errorf("%s: %s in a paused workflow has %d runs, inbox %d; want none and 1 unread", when, name, len(runs), d)
			}
		}
		if w, err := c.GetWorkflow(ctx, crew); err != nil || w.State != "paused" {
			t.Errorf("%s: workflow state = %q, %v", when, w.State, err)
		}
	}
	held("paused")

	// An edit of the file is applied and keeps the workflow paused.
	saveFile(t, file, pausedTeam+"  carol:\n    backend: mock\n")
	waitWorkflow(t, th, crew, "carol added", func(w api.Workflow, as []api.Agent) bool { return agentIn(as, "carol") != nil })
	held("after an edit")

	// So does a restart.
	th = restartPluginHost(t, th, dir)
	ev, c = watchEvents(t, th), th.client()
	held("after a restart")
	aliceT := api.Target{Agent: "alice", Workflow: "crew", Tag: "main"}
	if err := c.Resume(ctx, aliceT); api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "agent-worker resume @crew") {
		t.Errorf("resume of an agent of a paused workflow: %v", err)
	}
	if err := c.Pause(ctx, api.Target{Workflow: "nope", Tag: "main"}); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("pause of an unknown workflow: %v", err)
	}

	if err := c.Resume(ctx, crew); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alice", "bob"} {
		key := store.AgentKey{Name: name, Workflow: "crew", Tag: "main"}
		testkit.WaitFor(t, name+"'s inbox to be read after resume", func() bool {
			d, err := th.DB().InboxDepth(ctx, key)
			if err != nil {
				t.Fatalf("inbox depth of %s: %v", name, err)
			}
			return d == 0
		})
	}
	if err := c.Resume(ctx, crew); api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "nothing to resume") {
		t.Errorf("resume of a running workflow: %v", err)
	}
}

// An agent of a stopped workflow is not resumed: none of its workflow's
// agents runs until the workflow is started again, and the refusal says
// how (issue 41: `resume dev@mini` said resumed, and its messages never
// ran). Starting the workflow again runs them.
func TestResumeOfAnAgentOfAStoppedWorkflowIsRefused(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ctx := context.Background()
	c := th.client()
	file := filepath.Join(t.TempDir(), "crew.yaml")
	saveFile(t, file, pausedTeam)
	if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	crew := api.Target{Workflow: "crew", Tag: "main"}
	if err := c.StopWorkflow(ctx, crew, false); err != nil {
		t.Fatal(err)
	}
	alice := api.Target{Agent: "alice", Workflow: "crew", Tag: "main"}
	err := c.Resume(ctx, alice)
	if api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "workflow @crew is stopped") ||
		!strings.Contains(err.Error(), "agent-worker start "+file) {
		t.Fatalf("resume of an agent of a stopped workflow: %v", err)
	}
	if a, err := c.GetAgent(ctx, alice); err != nil || a.State != api.AgentStopped {
		t.Errorf("the refused resume changed alice: %q, %v", a.State, err)
	}
	if err := c.Resume(ctx, api.Target{Agent: "nobody", Workflow: "crew", Tag: "main"}); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("resume of an unknown agent of a stopped workflow: %v", err)
	}
	if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	if a, err := c.GetAgent(ctx, alice); err != nil || a.State == api.AgentStopped {
		t.Errorf("alice after the workflow started again: %q, %v", a.State, err)
	}
}

// Cancel ends a run in flight: the plugin's whole process group (here a
// shell and its sleep, as a CLI backend's children) is gone, the run is
// recorded cancelled, the agent is idle, its inbox unread, and its next
// run sees the message again.
func TestCancelKillsTheRunsProcessTree(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ev := watchEvents(t, th)
	ctx := context.Background()
	c := th.client()
	worker := api.Target{Agent: "worker", Workflow: "global", Tag: "main"}
	// The first run hangs in a grandchild; later runs go straight on.
	mockAgent(t, th, "worker",
		map[string]any{"shell": "if [ -e '{{state_dir}}/ran' ]; then echo again; else touch '{{state_dir}}/ran'; sleep 3600; fi"},
		map[string]any{"result": "worker saw {{inbox_summary}}"})

	first, err := c.Send(ctx, api.SendRequest{Target: "worker", Message: "first"})
	if err != nil {
		t.Fatal(err)
	}
	ev.next("the run to start", runOf(team.EventRunStarted, "worker"))
	var pgid int
	testkit.WaitFor(t, "the run's plugin, shell and sleep", func() bool {
		ws := runWorkers(t, th)
		if len(ws) == 1 {
			pgid = ws[0].PGID
		}
		return pgid != 0 && len(groupMembers(t, pgid)) >= 3
	})
	running := lastRun(t, th, "worker")

	out, err := c.CancelRun(ctx, running.ID)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "cancelled" || out.Run != running.ID || out.Target != "worker" {
		t.Errorf("cancel answered %+v", out)
	}
	testkit.WaitFor(t, "process group "+strconv.Itoa(pgid)+" to be gone", func() bool { return len(groupMembers(t, pgid)) == 0 })
	r := lastRun(t, th, "worker")
	if r.ID != running.ID || r.State != "cancelled" {
		t.Errorf("cancelled run = %+v", r)
	}
	if a, err := c.GetAgent(ctx, worker); err != nil || a.State != "idle" || a.InboxDepth != 1 || a.Error != "" {
		t.Errorf("agent after cancel = state %q, inbox %d, error %q, %v; want idle, 1 unread, no error", a.State, a.InboxDepth, a.Error, err)
	}
	if n := len(runsOf(t, th, "worker")); n != 1 {
		t.Errorf("%d runs after a cancel, want 1: a cancel is not retried", n)
	}

	// Cancel of what is not in flight changes nothing.
	if _, err := c.CancelRun(ctx, running.ID); api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "already ended (cancelled)") {
		t.Errorf("cancel of a finished run: %v", err)
	}
	if _, err := c.CancelRun(ctx, "run_0000000000000000"); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("cancel of an unknown run: %v", err)
	}
	if _, err := c.CancelAgent(ctx, worker); api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "no run in flight") {
		t.Errorf("cancel of an idle agent: %v", err)
	}
	if _, err := c.CancelAgent(ctx, api.Target{Agent: "nobody", Workflow: "global", Tag: "main"}); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("cancel of an unknown agent: %v", err)
	}

	// The next run sees the cancelled run's message again.
	if _, err := c.Send(ctx, api.SendRequest{Target: "worker", Message: "second"}); err != nil {
		t.Fatal(err)
	}
	ev.settled(th, "worker")
	ms, err := c.Peek(ctx, "@global", 10, first.Seq)
	if err != nil {
		t.Fatalf("peek @global: %v", err)
	}
	var reply string
	for _, m := range ms {
		if m.From == "worker" {
			reply = m.Content
		}
	}
	if !strings.Contains(reply, "first") || !strings.Contains(reply, "second") {
		t.Errorf("the run after the cancel said %q, want it to have seen both messages", reply)
	}
}

// Cancel by agent ends its run the same way.
func TestCancelAgentRun(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ev := watchEvents(t, th)
	ctx := context.Background()
	c := th.client()
	mockAgent(t, th, "sleepy", map[string]any{"hang": true})
	c.Send(ctx, api.SendRequest{Target: "sleepy", Message: "go"})
	ev.next("the run to start", runOf(team.EventRunStarted, "sleepy"))
	out, err := c.CancelAgent(ctx, api.Target{Agent: "sleepy", Workflow: "global", Tag: "main"})
	if err != nil {
		t.Fatal(err)
	}
	r := lastRun(t, th, "sleepy")
	if out.Run != r.ID || r.State != "cancelled" || agentState(t, th, "sleepy") != api.AgentIdle || depth(t, th, "sleepy") != 1 {
		t.Errorf("after cancel: answer %+v, run %+v, agent %s, inbox %d", out, r, agentState(t, th, "sleepy"), depth(t, th, "sleepy"))
	}
}

// A run that exceeds its run timeout is recorded timed_out, not failed,
// and is still retried like a failed attempt.
func TestRunTimeoutIsRecordedTimedOut(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{RunTimeout: time.Second}, noPoll)
	mockAgent(t, th, "slow", map[string]any{"sleep": "1h", "when": map[string]any{"attempt": 1}}, map[string]any{"result": "done"})
	res, err := th.client().Serve(context.Background(), api.RunRequest{Agent: "slow", Message: "go"})
	if err != nil || res.Content != "done" {
		t.Fatalf("serve: %+v, %v", res, err)
	}
	runs := runsOf(t, th, "slow")
	if len(runs) != 2 || runs[1].State != api.RunTimedOut || !strings.Contains(runs[1].Error, "run timeout") || runs[0].State != api.RunSucceeded {
		t.Errorf("runs = %+v, want a timed_out attempt then a succeeded one", runs)
	}
}
