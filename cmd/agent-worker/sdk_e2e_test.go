package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

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
	daemon := exec.Command(binary, "daemon")
	daemon.Env = append(c.env(), "ANTHROPIC_BASE_URL="+m.URL, "ANTHROPIC_API_KEY=test-key")
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	go daemon.Wait()
	c.waitFor("the daemon", func() bool { _, err := api.ReadDaemonInfo(c.home); return err == nil })

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
