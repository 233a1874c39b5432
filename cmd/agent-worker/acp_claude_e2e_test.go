package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// acpAdapter returns the path of a pinned ACP adapter (claude-agent-acp,
// codex-acp). Without it the test is skipped, saying why: these tests run
// only when AGENT_WORKER_E2E_CLIS=1 (make test-e2e installs the pinned
// CLIs), and then a missing adapter fails them.
func acpAdapter(t *testing.T, name string) string {
	t.Helper()
	if os.Getenv("AGENT_WORKER_E2E_CLIS") != "1" {
		t.Skipf("the real %s runs only with AGENT_WORKER_E2E_CLIS=1 (make test-e2e installs the pinned CLIs)", name)
	}
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("AGENT_WORKER_E2E_CLIS=1 but %s is not on PATH: %v", name, err)
	}
	return path
}

// Claude Code through its ACP adapter (claude-agent-acp 0.23.1, whose
// Claude Agent SDK runs the Claude Code it bundles, 2.1.83) as the
// claude-acp preset's agent (no command, no config dir in its config:
// the preset keeps Claude Code's config in the agent's state directory), offline against the scripted Anthropic server, in a team with a
// mock: alice is prompted with her inbox and calls channel_send through
// the daemon's MCP server handed to her ACP session (bob, the mock,
// answers); her Write, which the adapter asks the client to permit, is
// refused by the phase of her effort and nothing is written; the tokens
// the adapter reports reach the run; her second run loads the same ACP
// session; and `cancel` during a turn held at the model ends the run
// with no adapter or Claude Code process left.
func TestE2EACPClaude(t *testing.T) {
	t.Parallel()
	acpAdapter(t, "claude-agent-acp") // on the daemon's PATH: the preset runs it from there
	c := newCLI(t)
	dir := filepath.Join(realPath(t, c.home), "workspaces", "global", "main", "alice")
	file := filepath.Join(dir, "main.go")
	model := startModel(t, false,
		modelTurn{"Tools": []any{map[string]any{"ID": "toolu_send1", "Name": "mcp__agent-worker__channel_send",
			"Args": map[string]any{"message": "@bob hello from claude over ACP"}}}, "InputTokens": 1000, "OutputTokens": 20},
		modelTurn{"Tools": []any{map[string]any{"ID": "toolu_w1", "Name": "Write",
			"Args": map[string]any{"file_path": file, "content": "package main\n"}}}, "InputTokens": 1100, "OutputTokens": 30},
		modelTurn{"Text": "first run done", "InputTokens": 1200, "OutputTokens": 5})
	c.startClaudeDaemon(model.URL)
	if !sandboxOn(c) {
		t.Errorf("the daemon does not confine runs:\n%s", c.ok("status"))
	}

	c.ok("new", "bob", "--backend", "mock")
	c.ok("new", "alice", "--backend", "claude-acp", "--system", "You are terse. SYSTEM-MARK-47")
	db, e := startEffortE2E(t, c, "alice", dir, 0)
	c.logRunsOnFailure("alice")

	c.ok("send", "alice", "please greet bob PROMPT-MARK-1")
	c.waitFor("alice's message and bob's answer", func() bool {
		p := c.ok("peek")
		return strings.Contains(p, "[alice] @bob hello from claude over ACP") && strings.Contains(p, "[bob]")
	})
	logs := c.lastRunLogs("alice", 1)
	c.waitFor("alice's inbox to be acked", func() bool { return c.agent("alice").InboxDepth == 0 })
	if _, ok := requestWith(model.requests(t), "SYSTEM-MARK-47", "PROMPT-MARK-1"); !ok {
		t.Errorf("no model request carried both the system prompt and the prompt:\n%s", logs)
	}
	if !strings.Contains(logs, `mcp__agent-worker__channel_send {"message":"@bob hello from claude over ACP"}`) {
		t.Errorf("the transcript does not show channel_send with its arguments:\n%s", logs)
	}
	if got := toolResult(mustRequest(t, model, `"tool_use_id":"toolu_send1"`), "toolu_send1"); !strings.Contains(got, `"mentions":["bob"]`) {
		t.Errorf("channel_send's result as the model read it: %q", got)
	}

	// The Write: the adapter asks session/request_permission, the phase's
	// gate refuses it, the adapter tells the model, nothing is written.
	if !strings.Contains(logs, "gate        edit_file: phase plan of skill implement does not allow edit_file") {
		t.Errorf("the transcript lacks the gate event with the phase's reason:\n%s", logs)
	}
	if got := toolResult(mustRequest(t, model, `"tool_use_id":"toolu_w1"`), "toolu_w1"); !strings.Contains(got, "refused permission") {
		t.Errorf("the refused Write's result as the model read it: %q", got)
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("%s was written although the gate refused it", file)
	}
	if obs, err := db.Observations(t.Context(), e.ID, 0); err != nil {
		t.Fatal(err)
	} else if got := strings.Join(observed(obs), "; "); strings.Contains(got, "main.go") || strings.Contains(got, "Write") || strings.Contains(got, "edit_file") {
		t.Errorf("observations = %q: the refused Write is no evidence", got)
	}

	a := c.agent("alice")
	var usage struct{ InputTokens, OutputTokens int64 }
	if err := json.Unmarshal(a.Runs[0].Usage, &usage); err != nil || usage.InputTokens != 3300 || usage.OutputTokens != 55 {
		t.Errorf("the first run's usage = %s (%v); want the 3300 input and 55 output tokens the model reported", a.Runs[0].Usage, err)
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
			t.Fatalf("the second run ended %s: %s\n%s", a.Runs[0].State, a.Runs[0].Error, c.lastRunLogs("alice", 2))
		}
		if got := c.sessionOf(a.Runs[0].ID); got != session {
			t.Errorf("the second run's session = %q, want the first's %q", got, session)
		}
		second, ok := requestWith(model.requests(t), "PROMPT-MARK-2")
		if !ok {
			t.Fatal("no model request carried the second prompt")
		}
		if !replaysToolCall(second, "mcp__agent-worker__channel_send") || !bytes.Contains(second.RawBody, []byte("first run done")) {
			t.Error("the second run's model request does not replay the first run's conversation: the session was not loaded")
		}
		if out := c.ok("peek"); !strings.Contains(out, "[alice] second run done") {
			t.Errorf("the second run's answer is not in the channel:\n%s", out)
		}
	})

	t.Run("cancel during a held turn", func(t *testing.T) {
		model.add(t, modelTurn{"Text": "never said", "Gate": "held"})
		c.ok("send", "alice", "hold on PROMPT-MARK-3")
		model.next(t, "gate held") // Claude Code waits on the model
		if len(agentProcesses(t, c.home, "claude")) == 0 {
			t.Fatal("no adapter or Claude Code process runs while the model is asked")
		}
		c.ok("cancel", "alice")
		c.waitFor("no adapter or Claude Code process left", func() bool { return len(agentProcesses(t, c.home, "claude")) == 0 })
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

// mustRequest is the model request holding every mark.
func mustRequest(t *testing.T, m *model, marks ...string) modelRequest {
	t.Helper()
	r, ok := requestWith(m.requests(t), marks...)
	if !ok {
		t.Fatalf("no model request holds %q", marks)
	}
	return r
}

// agentProcesses are the processes of home's daemon whose command line
// names what (an adapter, the CLI it drives), its plugins left out: the
// claude-acp and codex-acp plugins' own names hold "claude" and "codex",
// and a warm spare of them outlives a cancelled run by design.
func agentProcesses(t *testing.T, home, what string) []int {
	t.Helper()
	return slices.DeleteFunc(processesOf(t, home, what), func(pid int) bool {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		return err == nil && bytes.Contains(cmdline, []byte("agent-worker-backend-"))
	})
}

// logRunsOnFailure has a failed test log each run of the agent with its
// transcript, for what the real CLI did.
func (c *cli) logRunsOnFailure(name string) {
	c.t.Cleanup(func() {
		if c.t.Failed() {
			for _, r := range c.agent(name).Runs {
				c.t.Logf("%s's run %s (%s):\n%s", name, r.ID, r.State, c.ok("logs", r.ID))
			}
		}
	})
}
