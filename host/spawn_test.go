package host

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

const plannerTeam = `name: crew
agents:
  planner:
    backend: mock
    can_spawn: true
    max_spawned: 2
  worker:
    backend: mock
`

// A planner (can_spawn, max_spawned 2) spawns helpers over MCP and stops
// them; the limits, names and permissions hold, a spawned helper runs
// when mentioned, survives an edit of the file and stops with its
// workflow.
func TestPlannerSpawnsAndStopsHelpers(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ev := watchEvents(t, th)
	ctx := context.Background()
	c := th.client()
	file := filepath.Join(t.TempDir(), "crew.yaml")
	saveFile(t, file, plannerTeam)
	if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	planner := th.join(t, "planner@crew")
	worker := th.join(t, "worker@crew")

	out := planner.ok("agent_spawn", map[string]any{"name": "scout", "system_prompt": "You look things up.", "backend": "mock"})
	if out["name"] != "scout" || out["backend"] != "mock" || out["live"] != float64(1) || out["max"] != float64(2) {
		t.Errorf("agent_spawn = %v", out)
	}
	planner.ok("agent_spawn", map[string]any{"name": "fixer", "system_prompt": "You fix things."})
	planner.fails("agent_spawn", map[string]any{"name": "third", "system_prompt": "x"}, "already has 2 live spawned agent(s)")
	planner.fails("agent_spawn", map[string]any{"name": "scout", "system_prompt": "again"}, "already exists")
	planner.fails("agent_spawn", map[string]any{"name": "worker", "system_prompt": "clash"}, "already exists")
	planner.fails("agent_spawn", map[string]any{"name": "bad name!", "system_prompt": "x"}, "name")
	planner.fails("agent_spawn", map[string]any{"name": "mute", "system_prompt": "  "}, "system_prompt is empty")
	planner.fails("agent_spawn", map[string]any{"name": "alien", "system_prompt": "x", "backend": "nosuch"}, "nosuch")
	worker.fails("agent_spawn", map[string]any{"name": "rogue", "system_prompt": "x"}, "worker may not spawn agents: give it can_spawn: true")
	worker.fails("agent_stop", map[string]any{"name": "scout"}, "scout was not spawned by worker but by planner")
	planner.fails("agent_stop", map[string]any{"name": "worker"}, "worker was not spawned by planner but by the workflow file or the CLI")

	// list and info say who spawned them; the refused spawns left nothing.
	agents, err := c.ListAgents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]string{}
	for _, a := range agents {
		if a.Workflow == "crew" {
			by[a.Name] = a.SpawnedBy
		}
	}
	if len(by) != 4 || by["scout"] != "planner" || by["fixer"] != "planner" || by["worker"] != "" {
		t.Errorf("agents of crew and who spawned them: %v", by)
	}
	if a, err := c.GetAgent(ctx, api.Target{Agent: "fixer", Workflow: "crew", Tag: "main"}); err != nil || a.Backend != "mock" || a.System != "You fix things." {
		t.Errorf("fixer = %s %q, %v; want the planner's backend and its own prompt", a.Backend, a.System, err)
	}
	if a, err := c.GetAgent(ctx, api.Target{Agent: "planner", Workflow: "crew", Tag: "main"}); err != nil || !a.CanSpawn || a.MaxSpawned != 2 {
		t.Errorf("planner: can_spawn %v max_spawned %d, %v", a.CanSpawn, a.MaxSpawned, err)
	}

	// A spawned agent runs when mentioned.
	if _, err := c.Send(ctx, api.SendRequest{Target: "@crew", Message: "@scout find the docs"}); err != nil {
		t.Fatal(err)
	}
	ev.next("scout's run", func(e team.Event) bool {
		return e.Kind == team.EventRunFinished && e.Agent.Name == "scout" && e.Agent.Workflow == "crew"
	})
	ms, err := c.Peek(ctx, "@crew", 20, 0)
	if err != nil {
		t.Fatalf("peek @crew: %v", err)
	}
	var lines []string
	for _, m := range ms {
		lines = append(lines, m.From+": "+m.Content)
	}
	channel := strings.Join(lines, "\n")
	for _, want := range []string{"system: planner spawned scout (mock)", "scout: [scout] Processed"} {
		if !strings.Contains(channel, want) {
			t.Errorf("channel lacks %q:\n%s", want, channel)
		}
	}

	// Stopping one frees a place; stopping twice is no error.
	if out := planner.ok("agent_stop", map[string]any{"name": "scout"}); out["state"] != "stopped" {
		t.Errorf("agent_stop = %v", out)
	}
	planner.ok("agent_stop", map[string]any{"name": "scout"})
	planner.ok("agent_spawn", map[string]any{"name": "third", "system_prompt": "x"})

	// An edit of the file keeps the spawned agents; stopping the workflow
	// stops them.
	saveFile(t, file, plannerTeam+"  extra:\n    backend: mock\n")
	ev.next("the reload", func(e team.Event) bool {
		return e.Kind == team.EventWorkflow && e.State == "reloaded" && e.Agent.Workflow == "crew"
	})
	if a, err := c.GetAgent(ctx, api.Target{Agent: "fixer", Workflow: "crew", Tag: "main"}); err != nil || a.State == api.AgentStopped {
		t.Errorf("after a reload of the file the spawned fixer is %s, %v; want it kept", a.State, err)
	}
	if err := c.StopWorkflow(ctx, api.Target{Workflow: "crew", Tag: "main"}, false); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fixer", "third"} {
		if a, err := c.GetAgent(ctx, api.Target{Agent: name, Workflow: "crew", Tag: "main"}); err != nil || a.State != api.AgentStopped {
			t.Errorf("%s after its workflow stopped: %s, %v", name, a.State, err)
		}
	}
}

// The system lines of agent_spawn and agent_stop report what an agent
// did: they leave the loop guard's count alone, so agents cannot escape
// the guard by spawning between their messages.
func TestSpawnLinesDoNotResetTheLoopGuard(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ctx := context.Background()
	c := th.client()
	file := filepath.Join(t.TempDir(), "crew.yaml")
	saveFile(t, file, plannerTeam+"loop_guard: {max_rounds: 3}\n")
	if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	planner := th.join(t, "planner@crew")
	crew := api.Target{Workflow: "crew", Tag: "main"}
	planner.ok("channel_send", map[string]any{"message": "one"})
	planner.ok("channel_send", map[string]any{"message": "two"})
	planner.ok("agent_spawn", map[string]any{"name": "scout", "system_prompt": "You look things up."})
	planner.ok("agent_stop", map[string]any{"name": "scout"})
	if w, err := c.GetWorkflow(ctx, crew); err != nil || w.State != api.WorkflowRunning {
		t.Fatalf("after two agent messages and the spawn lines the workflow is %s, %v; want running", w.State, err)
	}
	planner.ok("channel_send", map[string]any{"message": "three"})
	if w, err := c.GetWorkflow(ctx, crew); err != nil || w.State != api.WorkflowPaused {
		t.Errorf("three agent messages with only spawn lines between: workflow %s, %v; want paused by the loop guard", w.State, err)
	}
}

const guardedPlanner = `name: guarded
agents:
  planner:
    backend: mock
    can_spawn: true
    approvals: {tools: [channel_send]}
    sandbox: {network: [5432]}
    limits: {pids: 512}
    max_steps: 7
    env: {PLANNER_SECRET: s3cret}
`

// A spawned agent can do no more than its planner (issue 40: a run never
// widens what runs may do): it gets the planner's approvals, sandbox,
// limits and steps, never its env, and it may run only on a backend an
// agent the owner defined runs on.
func TestSpawnedAgentIsNoWiderThanItsPlanner(t *testing.T) {
	t.Parallel()
	th := startHostWith(t, Config{Home: t.TempDir(), Listen: "127.0.0.1:0", PluginsDirs: []string{installed(t, "mock", "sdk")},
		RuntimeDir: testkit.ShortTempDir(t)})
	ctx := context.Background()
	c := th.client()
	file := filepath.Join(t.TempDir(), "guarded.yaml")
	saveFile(t, file, guardedPlanner)
	if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	planner := th.join(t, "planner@guarded")
	planner.ok("agent_spawn", map[string]any{"name": "helper", "system_prompt": "You help."})
	p, err := c.GetAgent(ctx, api.Target{Agent: "planner", Workflow: "guarded", Tag: "main"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.GetAgent(ctx, api.Target{Agent: "helper", Workflow: "guarded", Tag: "main"})
	if err != nil {
		t.Fatal(err)
	}
	want := backend.AgentConfig{Approvals: p.Config.Approvals, Sandbox: p.Config.Sandbox, Limits: p.Config.Limits, MaxSteps: 7}
	if diff := cmp.Diff(want, h.Config, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the helper's config is not its planner's limits (-want +got):\n%s", diff)
	}
	if h.Config.Approvals == nil || len(h.Config.Approvals.Tools) != 1 || h.CanSpawn {
		t.Errorf("the helper escaped its planner's gates: approvals %+v, can_spawn %v", h.Config.Approvals, h.CanSpawn)
	}
	planner.fails("agent_spawn", map[string]any{"name": "other", "system_prompt": "x", "backend": "sdk"},
		"no agent of this workflow runs on backend sdk")
}
