package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// lastRun is the id of agent's newest run.
func (c *cli) lastRun(agent string) string {
	c.t.Helper()
	var l api.RunList
	if err := json.Unmarshal([]byte(c.ok("runs", agent, "-n", "1", "--json")), &l); err != nil || len(l.Runs) != 1 {
		c.t.Fatalf("runs %s: %+v, %v", agent, l, err)
	}
	return l.Runs[0].ID
}

// replay runs `runs replay id --json`.
func (c *cli) replay(id string) api.Replay {
	c.t.Helper()
	var r api.Replay
	if err := json.Unmarshal([]byte(c.ok("runs", "replay", id, "--json")), &r); err != nil {
		c.t.Fatal(err)
	}
	return r
}

const replayTeam = `
agents:
  alice:
    model: anthropic/claude-sonnet-4-5
    tools: [read, write]
  bob:
    backend: mock
    config:
      script:
        - {tool: channel_send, args: {message: "hello from bob"}}
        - {result: "bob done"}
  slow:
    backend: mock
    config:
      script:
        - {hang: true}
`

// A recorded sdk run replays against its recorded model answers with no
// divergence, into a scratch team whose channel is not the real one, and
// without asking the model; a mock run replays through its script. After
// the workflow changes (alice loses her write tool, bob's script says
// something else) the replays report the first step that differs. A
// running run is a conflict, an unknown one not found, and a claude run is
// refused with why.
func TestE2ERunsReplay(t *testing.T) {
	t.Parallel()
	m := startModel(t, false,
		modelTurn{"Tools": []map[string]any{
			{"Name": "write_file", "Args": map[string]any{"path": "out/a.txt", "content": "hi"}},
			{"Name": "channel_send", "Args": map[string]any{"message": "wrote out/a.txt"}},
		}, "InputTokens": 1000, "OutputTokens": 30},
		modelTurn{"Text": "all done", "InputTokens": 1100, "OutputTokens": 5})
	c := newCLI(t)
	c.startModelDaemon(m)
	dir := t.TempDir()
	file := filepath.Join(dir, "team.yaml")
	writeFile(t, file, replayTeam)
	c.ok("start", file, "--background")

	if out := c.ok("ask", "alice@team", "write out/a.txt and tell the team"); !strings.Contains(out, "all done") {
		t.Fatalf("ask printed %q", out)
	}
	alice := c.lastRun("alice@team")
	asked := len(m.requests(t))

	r := c.replay(alice)
	if r.Of != alice || r.Run == "" || r.Run == alice || r.State != "succeeded" || r.Divergence != nil || !strings.HasPrefix(r.Agent, "alice@team:replay-") {
		t.Fatalf("replay of the sdk run = %+v, divergence %+v; want a succeeded run in a scratch tag with no divergence", r, r.Divergence)
	}
	if n := len(m.requests(t)); n != asked {
		t.Errorf("the replay asked the scripted model %d more time(s); it must serve the recorded answers itself", n-asked)
	}
	scratch := "@" + strings.SplitN(r.Agent, "@", 2)[1]
	if out := c.ok("peek", scratch); !strings.Contains(out, "[alice] wrote out/a.txt") {
		t.Errorf("the scratch team's channel lacks the replay's message:\n%s", out)
	}
	if out := c.ok("peek", "@team"); strings.Count(out, "wrote out/a.txt") != 1 {
		t.Errorf("the real team's channel has the message %d times, want once (the replay posts into its scratch team):\n%s", strings.Count(out, "wrote out/a.txt"), out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out", "a.txt")); err != nil || string(b) != "hi" {
		t.Errorf("the recorded run's file = %q, %v", b, err)
	}
	if out := c.ok("runs", "replay", alice); !strings.Contains(out, "no divergence") || !strings.Contains(out, "replayed "+alice+" as run_") {
		t.Errorf("runs replay printed:\n%s", out)
	}

	c.ok("ask", "bob@team", "hi")
	bob := c.lastRun("bob@team")
	if r := c.replay(bob); r.State != "succeeded" || r.Divergence != nil || r.Backend != "mock" {
		t.Errorf("replay of the mock run = %+v, divergence %+v; want no divergence", r, r.Divergence)
	}

	// A running run, an unknown one.
	c.ok("send", "slow@team", "take your time")
	c.waitFor("slow's run", func() bool { a := c.agent("slow@team"); return len(a.Runs) > 0 && a.Runs[0].State == "running" })
	slow := c.agent("slow@team").Runs[0].ID
	if res := c.run("runs", "replay", slow); res.code != api.ExitConflict || !strings.Contains(res.stderr, "still running") {
		t.Errorf("replay of a running run: exit %d, stderr %q", res.code, res.stderr)
	}
	c.ok("cancel", slow)
	if res := c.run("runs", "replay", "run_nope"); res.code != api.ExitNotFound || !strings.Contains(res.stderr, "run run_nope not found") {
		t.Errorf("replay of an unknown run: exit %d, stderr %q", res.code, res.stderr)
	}

	// The agents change: the same recordings now go another way.
	writeFile(t, file, strings.NewReplacer("tools: [read, write]", "tools: [read]", "hello from bob", "bob says something else").Replace(replayTeam))
	c.waitFor("the edit to load", func() bool {
		b, _ := json.Marshal(c.agent("bob@team").Config)
		return strings.Contains(string(b), "something else")
	})
	r = c.replay(alice)
	if d := r.Divergence; d == nil || d.What != "tool result" || d.Recorded != "write_file ok" || !strings.HasPrefix(d.Replayed, "write_file error") {
		t.Errorf("replay after alice lost her write tool: divergence %+v, want write_file's result ok then an error", d)
	}
	if out := c.ok("runs", "replay", bob); !strings.Contains(out, "diverged at step 1 (tool call)") ||
		!strings.Contains(out, "hello from bob") || !strings.Contains(out, "bob says something else") {
		t.Errorf("replay after bob's script changed:\n%s", out)
	}

	// A claude run: its model is the CLI's.
	c.ok("new", "carol", "--backend", "claude")
	c.ok("send", "carol", "hi")
	c.waitFor("carol's run", func() bool { a := c.agent("carol"); return len(a.Runs) > 0 && a.Runs[0].State != "running" })
	if res := c.run("runs", "replay", c.agent("carol").Runs[0].ID); res.code != api.ExitUsage || !strings.Contains(res.stderr, "cannot be replayed: the claude CLI talks to its model itself") {
		t.Errorf("replay of a claude run: exit %d, stderr %q", res.code, res.stderr)
	}
}

// A replay of a run whose plugin changed since (here the mock plugin's
// binary, replaced by a copy with bytes appended) says so, and runs.
func TestE2EReplaySaysThePluginChanged(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	plugins := t.TempDir()
	b, err := os.ReadFile(mockPlugin)
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(plugins, "agent-worker-backend-mock")
	if err := os.WriteFile(own, b, 0o755); err != nil {
		t.Fatal(err)
	}
	c.fixedEnv = append(c.env(), "AGENT_WORKER_PLUGINS_DIR="+plugins)
	sha := func() string {
		var l api.PluginList
		if json.Unmarshal([]byte(c.ok("plugins", "--json")), &l) != nil {
			return ""
		}
		for _, p := range l.Plugins {
			if p.Name == "mock" && p.Error == "" {
				return p.SHA256
			}
		}
		return ""
	}
	c.ok("new", "bob", "--backend", "mock", "--config", `{"script":[{"result":"bob done"}]}`)
	c.ok("ask", "bob", "go")
	before, id := sha(), c.lastRun("bob")
	if r := c.replay(id); r.PluginChanged != "" {
		t.Errorf("a replay with the same plugin says it changed: %q", r.PluginChanged)
	}
	// The plugin is replaced (a new build): the catalog sees a new binary.
	tmp := filepath.Join(plugins, ".mock.tmp")
	if err := os.WriteFile(tmp, append(b, []byte("\x00a new build")...), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, own); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the catalog to see the new mock plugin", func() bool { s := sha(); return s != "" && s != before })
	r := c.replay(id)
	if !strings.Contains(r.PluginChanged, "the mock plugin changed since the recording") {
		t.Errorf("replay after the plugin changed: plugin_changed = %q", r.PluginChanged)
	}
	if out := c.ok("runs", "replay", id); !strings.Contains(out, "note: the mock plugin changed since the recording") {
		t.Errorf("runs replay does not say the plugin changed:\n%s", out)
	}
}
