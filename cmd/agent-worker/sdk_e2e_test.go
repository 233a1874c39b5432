package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// startModelDaemon starts the daemon with the Anthropic API pointed at m
// and a key set, and waits until it answers.
func (c *cli) startModelDaemon(m *model) {
	c.t.Helper()
	daemon := exec.Command(binary, "daemon")
	daemon.Env = append(c.env(), "ANTHROPIC_BASE_URL="+m.URL, "ANTHROPIC_API_KEY=test-key")
	if err := daemon.Start(); err != nil {
		c.t.Fatal(err)
	}
	go daemon.Wait()
	c.waitFor("the daemon", func() bool { _, err := api.ReadDaemonInfo(c.home); return err == nil })
}

// The sdk backend through the daemon: the scripted model makes the agent
// post via channel_send, the run records tokens and cost, and a missing
// API key fails the agent at once, naming the variable.
func TestE2ESDKBackend(t *testing.T) {
	t.Parallel()
	m := startModel(t, false,
		modelTurn{"Tools": []map[string]any{{"Name": "channel_send", "Args": map[string]any{"message": "hello from the sdk backend"}}},
			"InputTokens": 1200, "OutputTokens": 40},
		modelTurn{"Text": "all done", "InputTokens": 1300, "OutputTokens": 10})
	c := newCLI(t)
	c.startModelDaemon(m)

	c.ok("new", "dora", "--backend", "sdk", "--model", "anthropic/claude-sonnet-4-5", "--system", "You are dora.")
	c.ok("send", "dora", "say hello")
	c.waitFor("dora's run", func() bool { a := c.agent("dora"); return len(a.Runs) > 0 && a.Runs[0].State != "running" })
	a := c.agent("dora")
	if a.Runs[0].State != "succeeded" || a.InboxDepth != 0 {
		t.Fatalf("dora = state %s, inbox %d, runs %+v", a.State, a.InboxDepth, a.Runs)
	}
	if out := c.ok("peek"); !strings.Contains(out, "[dora] hello from the sdk backend") {
		t.Errorf("peek:\n%s", out)
	}
	var usage struct {
		InputTokens, OutputTokens int64
		CostUSD                   float64
	}
	if err := json.Unmarshal(a.Runs[0].Usage, &usage); err != nil || usage.InputTokens != 2500 || usage.OutputTokens != 50 || usage.CostUSD <= 0 {
		t.Errorf("run usage = %s (%v)", a.Runs[0].Usage, err)
	}
	if reqs := m.requests(t); len(reqs) < 1 || !strings.Contains(string(reqs[0].RawBody), "You are dora.") {
		t.Errorf("the model did not get the system prompt")
	}

	// No OPENAI_API_KEY in the daemon's environment.
	c.ok("new", "eve", "--backend", "sdk", "--model", "openai/gpt-4o")
	c.ok("send", "eve", "hi")
	c.waitFor("eve to fail", func() bool { return c.agent("eve").State == "failed" })
	if e := c.agent("eve"); !strings.Contains(e.Error, "OPENAI_API_KEY") || len(e.Runs) != 1 || e.InboxDepth != 1 {
		t.Errorf("eve = error %q, %d runs, inbox %d; want OPENAI_API_KEY named, 1 run, message unread", e.Error, len(e.Runs), e.InboxDepth)
	}
}

// The sdk backend works in the agent's directory and remembers: through
// the daemon, the real plugin and the scripted model, an agent writes and
// reads a file with its workspace tools, its next ask carries the first
// exchange, and after `reset` it does not.
func TestE2ESDKWorkspaceToolsAndMemory(t *testing.T) {
	t.Parallel()
	m := startModel(t, false,
		modelTurn{"Tools": []map[string]any{{"Name": "write_file", "Args": map[string]any{"path": "out/hello.txt", "content": "hello from alice"}}}},
		modelTurn{"Tools": []map[string]any{{"Name": "read_file", "Args": map[string]any{"path": "out/hello.txt"}}}},
		modelTurn{"Text": "The file says hello from alice."},
		modelTurn{"Text": "You asked me to write out/hello.txt."},
		modelTurn{"Text": "I have no memory of that."})
	c := newCLI(t)
	c.startModelDaemon(m)

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "team.yaml"), `
agents:
  alice:
    model: anthropic/claude-sonnet-4-5
    tools: [read, write]
`)
	c.ok("start", filepath.Join(dir, "team.yaml"), "--background")
	if out := c.ok("ask", "alice@team", "write out/hello.txt and read it back"); !strings.Contains(out, "The file says hello from alice.") {
		t.Errorf("ask printed %q", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out", "hello.txt")); err != nil || string(b) != "hello from alice" {
		t.Errorf("out/hello.txt in the workflow's directory = %q, %v; want what the model wrote", b, err)
	}
	offered := string(m.requests(t)[0].RawBody)
	if !strings.Contains(offered, `"name":"write_file"`) || !strings.Contains(offered, `"name":"read_file"`) || strings.Contains(offered, `"name":"run_shell"`) {
		t.Errorf("tools: [read, write] offered the model: %s", offered)
	}

	messages := func(r modelRequest) []any { msgs, _ := r.Body["messages"].([]any); return msgs }
	c.ok("ask", "alice@team", "what did I ask you before?")
	reqs := m.requests(t)
	second := messages(reqs[3])
	if len(second) != 3 || !strings.Contains(fmt.Sprint(second[0]), "write out/hello.txt and read it back") ||
		!strings.Contains(fmt.Sprint(second[1]), "wrote 16 bytes to out/hello.txt") || !strings.Contains(fmt.Sprint(second[2]), "what did I ask you before?") {
		t.Errorf("the second ask sent the model %d messages: %v\nwant the first ask, the answer with its tool results, then the question", len(second), second)
	}

	if out := c.ok("reset", "alice@team"); !strings.Contains(out, "alice@team forgot its conversation") {
		t.Errorf("reset printed %q", out)
	}
	c.ok("ask", "alice@team", "what did I ask you before?")
	if third := messages(m.requests(t)[4]); len(third) != 1 || strings.Contains(fmt.Sprint(third), "wrote 16 bytes") {
		t.Errorf("after reset the model got %d messages: %v; want only the new prompt", len(third), third)
	}

	if r := c.run("reset", "ghost"); r.code != 3 || !strings.Contains(r.stderr, "no agent ghost") {
		t.Errorf("reset ghost = exit %d, stderr %q; want 3 and the agent named", r.code, r.stderr)
	}
}
