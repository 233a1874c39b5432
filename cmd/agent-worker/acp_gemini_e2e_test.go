package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// geminiSend scripts the model to call the daemon's channel_send as
// Gemini CLI offers it: mcp_<server>_<tool>.
func geminiSend(message string) modelTurn {
	return modelTurn{"Tools": []any{map[string]any{"Name": "mcp_agent-worker_channel_send", "Args": map[string]any{"message": message}}},
		"InputTokens": 120, "OutputTokens": 8}
}

// geminiConfig is the config of an agent of the gemini preset running
// the real gemini CLI offline against model: the API key and base URL of
// its "gateway" auth (no authenticate call needed) and the model
// (GEMINI_MODEL; "auto" would spend a scripted turn on its routing
// classifier). The rest is the preset's: its home in the agent's state
// directory, seeded with settings that turn off its usage statistics,
// telemetry, update checks and IDE integration; the workspace trusted
// (in an untrusted folder gemini starts no MCP server, the daemon's
// included); and its own file system (fs: false).
func geminiConfig(model string) string {
	cfg, _ := json.Marshal(map[string]any{
		"env":     map[string]string{"GOOGLE_GEMINI_BASE_URL": model, "GEMINI_API_KEY": "x", "GEMINI_MODEL": "gemini-2.5-flash"},
		"timeout": "60s",
	})
	return string(cfg)
}

// The real Gemini CLI in ACP mode (gemini --acp, pinned 0.61.0) as the
// gemini preset's agent in a team with a mock, offline against the
// scripted Gemini API. Carol's effort is in phase plan: the model's
// write_file is refused by the phase (gemini asks session/request_permission,
// the gate answers reject: the refusal is in the transcript and main.go
// is not written; the model reads only gemini's "canceled by the user",
// as an ACP permission answer carries no reason); its channel_send through the daemon's MCP server
// reaches the channel and bob, the mock, answers; the turn's token
// usage reaches the run record; her second run loads the same ACP
// session (session/load: the model gets the first run's call again);
// and `cancel` while the model is held ends the run, leaving no gemini
// process and the message unread.
func TestE2EACPGemini(t *testing.T) {
	if os.Getenv("AGENT_WORKER_E2E_CLIS") != "1" {
		t.Skip("runs the real gemini CLI: set AGENT_WORKER_E2E_CLIS=1 with it on PATH (make e2e-deps)")
	}
	gemini := realCLI(t, "gemini") // on the daemon's PATH: the gemini preset runs it from there
	t.Parallel()
	c := newCLI(t)
	dir := filepath.Join(realPath(t, c.home), "workspaces", "global", "main", "carol")
	model := startModel(t, false,
		modelTurn{"Tools": []any{map[string]any{"Name": "write_file", "Args": map[string]any{
			"file_path": filepath.Join(dir, "main.go"), "content": "package main\n"}}}, "InputTokens": 100, "OutputTokens": 5},
		geminiSend("@bob hello from gemini"),
		modelTurn{"Text": "carol done", "InputTokens": 150, "OutputTokens": 3})
	c.startDaemon()
	if !sandboxOn(c) {
		t.Errorf("the daemon does not confine runs: gemini is not shown to work in the sandbox:\n%s", c.ok("status"))
	}
	state := filepath.Join(c.home, "state", "global", "main", "carol")
	c.ok("new", "bob", "--backend", "mock")
	c.ok("new", "carol", "--backend", "gemini", "--system", "You are Carol. SYSTEM-MARK-77", "--config", geminiConfig(model.URL))
	startEffortE2E(t, c, "carol", dir, 0)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, r := range c.agent("carol").Runs {
			t.Logf("carol's run %s (%s):\n%s", r.ID, r.State, c.run("logs", r.ID).stdout)
		}
		filepath.WalkDir(state, func(path string, d os.DirEntry, err error) error {
			t.Logf("gemini's state: %s", path)
			return nil
		})
		for i, r := range model.requests(t) {
			contents, _ := json.Marshal(r.Body["contents"])
			if i == 0 {
				var names []string
				for _, m := range regexp.MustCompile(`"name":"([^"]+)","description"`).FindAllSubmatch(r.RawBody, -1) {
					names = append(names, string(m[1]))
				}
				t.Logf("tools offered: %s", strings.Join(names, " "))
			}
			t.Logf("model request %d: %s …%s", i, r.Path, contents[max(0, len(contents)-1500):])
		}
	})

	c.ok("send", "carol", "what is in the README? PROMPT-MARK-1")
	c.waitFor("carol's message and bob's answer", func() bool {
		p := c.ok("peek")
		return strings.Contains(p, "[carol] @bob hello from gemini") && strings.Contains(p, "[bob]")
	})
	logs := c.lastRunLogs("carol", 1)
	first := c.agent("carol").Runs[0]
	if first.State != "succeeded" {
		t.Fatalf("carol's first run ended %s (%s):\n%s", first.State, first.Error, logs)
	}
	// Gemini's write_file is of kind edit: the gate's edit_file.
	if !strings.Contains(logs, "gate        edit_file: phase plan of skill implement does not allow edit_file") {
		t.Errorf("the transcript lacks the phase's refusal of write_file:\n%s", logs)
	}
	if _, err := os.Stat(filepath.Join(dir, "main.go")); err == nil {
		t.Error("main.go was written although the phase refused it")
	}
	reqs := model.requests(t)
	if r, ok := requestWith(reqs, "SYSTEM-MARK-77", "PROMPT-MARK-1"); !ok || !strings.Contains(r.Path, "gemini-2.5-flash:streamGenerateContent") {
		t.Errorf("no streamGenerateContent request for gemini-2.5-flash carried the system prompt and the prompt (%d requests)", len(reqs))
	}
	var runs api.RunList
	if err := json.Unmarshal([]byte(c.ok("runs", "carol", "--json")), &runs); err != nil || len(runs.Runs) != 1 {
		t.Fatalf("runs --json: %v, %+v", err, runs)
	}
	// Gemini's count of the turn's three model calls (_meta.quota).
	if r := runs.Runs[0]; r.InputTokens != 370 || r.OutputTokens != 16 {
		t.Errorf("carol's run recorded %d input and %d output tokens, want 370 and 16", r.InputTokens, r.OutputTokens)
	}
	session := c.sessionOf(first.ID)
	if session == "" {
		t.Fatal("the first run reported no ACP session")
	}

	// gemini-cli 0.61.0 names a session's file by the minute it starts
	// (session-<YYYY-MM-DDTHH-MM>-<id>.jsonl) and session/load starts a
	// recording of the same name: in the same minute it overwrites the
	// conversation and the load fails ("No previous sessions found for
	// this project"). The second run starts in the next minute.
	time.Sleep(time.Until(first.StartedAt.UTC().Truncate(time.Minute).Add(time.Minute + time.Second)))
	model.add(t, modelTurn{"Text": "second run done"})
	c.ok("send", "carol", "and the license? PROMPT-MARK-2")
	c.waitFor("carol's second run", func() bool {
		a := c.agent("carol")
		return len(a.Runs) == 2 && a.Runs[0].State.Ended() && a.InboxDepth == 0
	})
	second := c.agent("carol").Runs[0]
	logs = c.lastRunLogs("carol", 2)
	if second.State != "succeeded" {
		t.Fatalf("carol's second run ended %s (%s):\n%s", second.State, second.Error, logs)
	}
	if strings.Contains(logs, "could not load session") {
		t.Errorf("the second run did not load the first one's session:\n%s", logs)
	}
	if got := c.sessionOf(second.ID); got != session {
		t.Errorf("the second run's session = %q, want the first's %q (session/load):\n%s", got, session, logs)
	}
	if r, ok := requestWith(model.requests(t), "PROMPT-MARK-2"); !ok || !strings.Contains(string(r.RawBody), "hello from gemini") {
		t.Errorf("the second run's model request does not carry the first run's conversation (found: %v)", ok)
	}

	model.add(t, modelTurn{"Gate": "hold", "Text": "too late"})
	c.ok("send", "carol", "hold on")
	model.next(t, "gate hold") // gemini now waits on the model
	if len(agentProcesses(t, c.home, gemini)) == 0 {
		t.Fatal("no gemini process although the model was asked")
	}
	c.ok("cancel", "carol")
	c.waitFor("no gemini process left", func() bool { return len(agentProcesses(t, c.home, gemini)) == 0 })
	c.waitFor("carol's third run to end", func() bool {
		a := c.agent("carol")
		return len(a.Runs) == 3 && a.Runs[0].State.Ended()
	})
	if a := c.agent("carol"); a.Runs[0].State != "cancelled" || a.InboxDepth != 1 {
		t.Errorf("carol after cancel: run %s, inbox %d; want cancelled with the message unread", a.Runs[0].State, a.InboxDepth)
	}
}
