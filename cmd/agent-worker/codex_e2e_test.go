package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// codexSend scripts the model to call the daemon's channel_send as Codex
// offers it: in namespace mcp__agent_worker.
func codexSend(message string) modelTurn {
	return modelTurn{"Tools": []map[string]any{{"Name": "mcp__agent_worker__channel_send", "Args": map[string]any{"message": message}}}}
}

// waitCodexRuns waits until the agent has n succeeded runs and an empty
// inbox, failing at once on a failed run.
func waitCodexRuns(c *cli, name string, n int) api.Agent {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := c.agent(name)
		succeeded := 0
		for _, r := range a.Runs {
			switch r.State {
			case "succeeded":
				succeeded++
			case "failed":
				c.t.Fatalf("run %s of %s failed: %s", r.ID, name, r.Error)
			}
		}
		if succeeded >= n && a.InboxDepth == 0 && a.State != "running" {
			return a
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %d succeeded runs of %s: %+v", n, name, a)
		}
		time.Sleep(50 * time.Millisecond) // another process's state
	}
}

// sessionOf returns the session id a run reported.
func sessionOf(c *cli, runID string) string {
	c.t.Helper()
	d, err := c.client().GetRun(context.Background(), runID)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, e := range d.Events {
		var s struct {
			SessionID string `json:"session_id"`
		}
		if e.Kind == "session" && json.Unmarshal(e.Data, &s) == nil && s.SessionID != "" {
			return s.SessionID
		}
	}
	return ""
}

// The real codex CLI under the daemon, offline against the scripted model:
// bob answers through the daemon's MCP server, gets his system prompt as
// developer instructions, and his second run resumes his thread.
func TestE2ECodexBackend(t *testing.T) {
	realCLI(t, "codex")
	t.Parallel()
	model := startModel(t, false,
		codexSend("hello from bob"), modelTurn{"Text": "bob done"},
		codexSend("hello again from bob"), modelTurn{"Text": "bob done again"})
	c := newCLI(t)
	daemon := exec.Command(binary, "daemon")
	daemon.Env = append(c.env(), "OPENAI_BASE_URL="+model.URL+"/v1", "OPENAI_API_KEY=x")
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	go daemon.Wait()
	c.waitFor("the daemon", func() bool { _, err := api.ReadDaemonInfo(c.home); return err == nil })

	// Every run below is confined (issue 26): the real CLI works inside.
	if !sandboxOn(c) {
		t.Errorf("the daemon does not confine runs:\n%s", c.ok("status"))
	}
	c.ok("new", "bob", "--backend", "codex", "--model", "openai/gpt-fake", "--system", "You are Bob. SYSTEM-MARKER-5120",
		"--config", `{"timeout": "30s"}`)
	c.ok("send", "bob", "please say hello")
	first := waitCodexRuns(c, "bob", 1)
	c.ok("send", "bob", "say it again")
	second := waitCodexRuns(c, "bob", 2)

	out := c.ok("peek")
	for _, want := range []string{"[bob] hello from bob", "[bob] hello again from bob"} {
		if !strings.Contains(out, want) {
			t.Errorf("the channel lacks %q:\n%s", want, out)
		}
	}
	thread := sessionOf(c, first.Runs[0].ID)
	if thread == "" || sessionOf(c, second.Runs[0].ID) != thread {
		t.Errorf("sessions of the two runs: %q and %q, want the same codex thread", thread, sessionOf(c, second.Runs[0].ID))
	}

	c.stopDaemon()
	reqs := model.requests(t)
	if len(reqs) != 4 {
		t.Fatalf("the model got %d requests, want 4 (two per run)", len(reqs))
	}
	if reqs[0].Path != "/v1/responses" || reqs[0].Body["model"] != "gpt-fake" {
		t.Errorf("first request: %s for model %v, want /v1/responses for gpt-fake", reqs[0].Path, reqs[0].Body["model"])
	}
	if !developerSays(reqs[0], "SYSTEM-MARKER-5120") {
		t.Error("the system prompt did not reach the model as developer instructions")
	}
	if !replays(reqs[2], "function_call", "hello from bob") {
		t.Error("the second run's first request lacks the first run's tool call: the thread was not resumed")
	}
}

// developerSays reports whether a developer message of a Responses API
// request contains text.
func developerSays(r modelRequest, text string) bool {
	input, _ := r.Body["input"].([]any)
	for _, in := range input {
		m, _ := in.(map[string]any)
		if m["role"] != "developer" {
			continue
		}
		b, _ := json.Marshal(m["content"])
		if strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}

// replays reports whether a request's input holds an item of type typ
// mentioning text: history that only a resumed thread re-sends.
func replays(r modelRequest, typ, text string) bool {
	input, _ := r.Body["input"].([]any)
	for _, in := range input {
		m, _ := in.(map[string]any)
		b, _ := json.Marshal(m)
		if m["type"] == typ && strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}

// Codex's own tools under the daemon's gate (issue 43): in phase plan of
// the example skill the model's apply_patch, which would add main.go, is
// refused by the run's PreToolUse hook (the plugin binary asking the
// daemon, inside the run's sandbox); the model reads the phase's reason
// as the tool's output, the file is not written, and the transcript
// shows the gate event, which Codex's own stream does not mention.
func TestE2ECodexGated(t *testing.T) {
	t.Parallel()
	realCLI(t, "codex")
	c := newCLI(t)
	dir := filepath.Join(realPath(t, c.home), "workspaces", "global", "main", "alice")
	patch := "*** Begin Patch\n*** Add File: main.go\n+package main\n*** End Patch"
	model := startModel(t, false,
		modelTurn{"Tools": []any{map[string]any{"ID": "call_p1", "Name": "apply_patch", "Input": patch}}},
		modelTurn{"Text": "I will plan first"})
	c.startDaemon("OPENAI_BASE_URL="+model.URL+"/v1", "OPENAI_API_KEY=x")
	if !sandboxOn(c) {
		t.Errorf("the daemon does not confine runs: the hook is not shown to work in the sandbox:\n%s", c.ok("status"))
	}
	// A model Codex knows, so that it offers apply_patch.
	c.ok("new", "alice", "--backend", "codex", "--model", "openai/gpt-5.5", "--config", `{"timeout": "30s"}`)
	db, e := startEffortE2E(t, c, "alice", dir, 0)

	c.ok("send", "alice", "plan the change")
	c.refused("alice", "phase plan of skill implement does not allow apply_patch", model, filepath.Join(dir, "main.go"), db, e,
		`"custom_tool_call_output"`, `"call_p1"`)
}
