package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Codex through its ACP adapter (codex-acp 0.16.0) as the acp backend's
// agent, offline against the scripted OpenAI Responses API, in a team
// with a mock: alice calls channel_send through the daemon's MCP server
// handed to her ACP session (bob, the mock, answers); her apply_patch,
// which Codex asks the client to permit in its read-only mode, is
// refused by the phase of her effort, which ends her turn (codex-acp
// offers only "abort" to refuse), and nothing is written; her second
// run loads the same ACP session; and `cancel` during a turn held at the
// model ends the run with no adapter or Codex process left. codex-acp
// reports no token usage in ACP (only the context window's fill), so the
// run records none.
func TestE2EACPCodex(t *testing.T) {
	t.Parallel()
	acpAdapter(t, "codex-acp") // on the daemon's PATH: the codex-acp preset runs it from there
	c := newCLI(t)
	dir := filepath.Join(realPath(t, c.home), "workspaces", "global", "main", "alice")
	file := filepath.Join(dir, "main.go")
	patch := "*** Begin Patch\n*** Add File: main.go\n+package main\n*** End Patch"
	model := startModel(t, false,
		modelTurn{"Tools": []any{map[string]any{"ID": "call_send1", "Name": "mcp__agent_worker__channel_send",
			"Args": map[string]any{"message": "@bob hello from codex over ACP"}}}},
		modelTurn{"Tools": []any{map[string]any{"ID": "call_p1", "Name": "apply_patch", "Input": patch}}})
	c.startDaemon()
	if !sandboxOn(c) {
		t.Errorf("the daemon does not confine runs:\n%s", c.ok("status"))
	}

	// Codex reads its model provider from CODEX_HOME/config.toml, kept
	// with its sessions (which session/load reads back) in a directory
	// the sandbox grants; it must exist when the run starts.
	home := filepath.Join(realPath(t, t.TempDir()), "codex")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	// A model Codex knows, so that it offers apply_patch; few retries, so
	// that a dead model server ends the run.
	toml := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = %q
env_key = "OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, model.URL+"/v1")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	// OPENAI_BASE_URL names the model's port to the sandbox, which grants
	// a run the ports of the *_BASE_URLs in its environment.
	cfg, _ := json.Marshal(map[string]any{
		"env":     map[string]string{"CODEX_HOME": home, "OPENAI_API_KEY": "x", "OPENAI_BASE_URL": model.URL + "/v1"},
		"sandbox": map[string]any{"write": []string{home}}})
	c.ok("new", "bob", "--backend", "mock")
	c.ok("new", "alice", "--backend", "codex-acp", "--system", "You are terse. SYSTEM-MARK-48", "--config", string(cfg))
	db, e := startEffortE2E(t, c, "alice", dir, 0)
	c.logRunsOnFailure("alice")

	c.ok("send", "alice", "please greet bob PROMPT-MARK-1")
	c.waitFor("alice's message and bob's answer", func() bool {
		p := c.ok("peek")
		return strings.Contains(p, "[alice] @bob hello from codex over ACP") && strings.Contains(p, "[bob]")
	})
	logs := c.lastRunLogs("alice", 1)
	c.waitFor("alice's inbox to be acked", func() bool { return c.agent("alice").InboxDepth == 0 })
	reqs := model.requests(t)
	if len(reqs) == 0 || reqs[0].Path != "/v1/responses" {
		t.Fatalf("the model's requests: %d, want the first at /v1/responses", len(reqs))
	}
	if !strings.Contains(string(reqs[0].RawBody), "SYSTEM-MARK-48") || !strings.Contains(string(reqs[0].RawBody), "PROMPT-MARK-1") {
		t.Errorf("the first model request lacks the system prompt or the prompt:\n%s", logs)
	}

	// apply_patch: Codex asks session/request_permission, the phase's gate
	// refuses it, nothing is written. Codex's only way to refuse is to
	// abort the turn, so the run ends there (and succeeds: a retry would
	// be refused again); the model is not asked again.
	if !strings.Contains(logs, "gate        edit_file: phase plan of skill implement does not allow edit_file") ||
		!strings.Contains(logs, "ended the turn when a tool call was refused") {
		t.Errorf("the transcript lacks the gate event with the phase's reason, or why the turn ended:\n%s", logs)
	}
	if n := len(model.requests(t)); n != 2 {
		t.Errorf("the model got %d requests in the first run, want 2 (the refused turn ends at apply_patch)", n)
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("%s was written although the gate refused it", file)
	}
	if obs, err := db.Observations(t.Context(), e.ID, 0); err != nil {
		t.Fatal(err)
	} else if got := strings.Join(observed(obs), "; "); strings.Contains(got, "main.go") || strings.Contains(got, "apply_patch") || strings.Contains(got, "edit_file") {
		t.Errorf("observations = %q: the refused apply_patch is no evidence", got)
	}

	a := c.agent("alice")
	if a.Runs[0].State != "succeeded" {
		t.Fatalf("the first run ended %s: %s", a.Runs[0].State, a.Runs[0].Error)
	}
	session := c.sessionOf(a.Runs[0].ID)
	if session == "" {
		t.Fatalf("the first run reported no ACP session:\n%s", logs)
	}

	t.Run("second run loads the session", func(t *testing.T) {
		model.add(t, modelTurn{"Text": "second run done"})
		c.ok("send", "alice", "anything new? PROMPT-MARK-2")
		c.waitFor("alice's second run", func() bool {
			a := c.agent("alice")
			return len(a.Runs) == 2 && a.Runs[0].State.Ended() && a.InboxDepth == 0
		})
		a := c.agent("alice")
		if a.Runs[0].State != "succeeded" {
			t.Fatalf("the second run ended %s: %s", a.Runs[0].State, a.Runs[0].Error)
		}
		if got := c.sessionOf(a.Runs[0].ID); got != session {
			t.Errorf("the second run's session = %q, want the first's %q", got, session)
		}
		second, ok := requestWith(model.requests(t), "PROMPT-MARK-2")
		if !ok {
			t.Fatal("no model request carried the second prompt")
		}
		if !replays(second, "function_call", "hello from codex over ACP") || !replays(second, "custom_tool_call", "main.go") {
			t.Error("the second run's model request does not replay the first run's conversation: the session was not loaded")
		}
		if out := c.ok("peek"); !strings.Contains(out, "[alice] second run done") {
			t.Errorf("the second run's answer is not in the channel:\n%s", out)
		}
	})

	t.Run("cancel during a held turn", func(t *testing.T) {
		model.add(t, modelTurn{"Text": "never said", "Gate": "held"})
		c.ok("send", "alice", "hold on PROMPT-MARK-3")
		model.next(t, "gate held") // Codex waits on the model
		if len(agentProcesses(t, c.home, "codex")) == 0 {
			t.Fatal("no adapter process runs while the model is asked")
		}
		c.ok("cancel", "alice")
		c.waitFor("no adapter or Codex process left", func() bool { return len(agentProcesses(t, c.home, "codex")) == 0 })
		c.waitFor("alice's third run to end", func() bool {
			a := c.agent("alice")
			return len(a.Runs) == 3 && a.Runs[0].State.Ended()
		})
		if a := c.agent("alice"); a.Runs[0].State != "cancelled" || a.InboxDepth != 1 {
			t.Errorf("alice after cancel: run %s, inbox %d; want cancelled with the message unread", a.Runs[0].State, a.InboxDepth)
		}
		if out := c.ok("peek"); strings.Contains(out, "never said") {
			t.Errorf("the cancelled turn's answer reached the channel:\n%s", out)
		}
	})
}
