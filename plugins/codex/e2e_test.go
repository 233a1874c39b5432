package codex

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/plugins/internal/fakemodel"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
)

// needCodex returns the real codex CLI, or skips the test without it
// (fails it under make test-e2e, which installs it).
func needCodex(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("codex")
	if err != nil {
		if os.Getenv("AGENT_WORKER_E2E_CLIS") == "1" {
			t.Fatal("codex CLI not on PATH although AGENT_WORKER_E2E_CLIS=1")
		}
		t.Skip("codex CLI not on PATH: run make test-e2e")
	}
	return path
}

// sendTurn scripts the model to call the daemon's channel_send the way
// Codex offers it: in the namespace mcp__<server>, with - turned into _.
func sendTurn(message string) fakemodel.Turn {
	return fakemodel.Turn{Tools: []fakemodel.ToolCall{{Name: "mcp__agent_worker__channel_send", Args: map[string]any{"message": message}}},
		InputTokens: 100, OutputTokens: 5}
}

// developerText is the text of the developer messages of a Responses API
// request: where Codex puts developer_instructions.
func developerText(r fakemodel.Request) string {
	var b strings.Builder
	input, _ := r.Body["input"].([]any)
	for _, in := range input {
		m, _ := in.(map[string]any)
		if m["role"] != "developer" {
			continue
		}
		content, _ := m["content"].([]any)
		for _, c := range content {
			part, _ := c.(map[string]any)
			text, _ := part["text"].(string)
			b.WriteString(text + "\n")
		}
	}
	return b.String()
}

// The backend against the real codex and the scripted model: an MCP call
// to the daemon, the system prompt as developer instructions, and a
// second run that resumes the thread.
func TestE2ERealCodex(t *testing.T) {
	path := needCodex(t)
	t.Setenv("OPENAI_API_KEY", "x")
	t.Setenv("HOME", t.TempDir())
	fm := fakemodel.New(t, sendTurn("hi from alice"), fakemodel.Turn{Text: "alice done"},
		sendTurn("again from alice"), fakemodel.Turn{Text: "alice done again"})
	d := backendtest.NewDaemon(t)
	b := &Backend{SessionsDir: t.TempDir(), getenv: func(k string) string {
		return map[string]string{"OPENAI_BASE_URL": fm.URL + "/v1"}[k]
	}}
	runOnce := func(resume, text string) *backendtest.Recorder {
		d.Post("user", "@alice "+text)
		req := d.Request("alice")
		req.Agent.Model, req.Agent.System = "openai/gpt-fake", "You are Alice. MARKER-7431"
		req.Agent.Config = json.RawMessage(`{"cli": "` + path + `", "timeout": "30s"}`)
		req.ResumeSession = resume
		rec, err := run(t, b, req)
		if err != nil {
			t.Fatalf("run: %v\nevents: %+v", err, rec.Events())
		}
		return rec
	}

	first := runOnce("", "say hi")
	sessions := first.Of(backend.EventSession)
	if len(sessions) == 0 {
		t.Fatal("no session event")
	}
	thread := sessions[0].SessionID
	if r := first.Of(backend.EventResult); len(r) != 1 || r[0].Text != "alice done" {
		t.Errorf("result events = %+v, want alice done", r)
	}
	if u := first.Of(backend.EventUsage); len(u) != 1 || u[0].Usage.InputTokens != 100 {
		t.Errorf("usage events = %+v, want the 100 input tokens of the turn", u)
	}
	reqs := fm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	if reqs[0].Path != "/v1/responses" || reqs[0].Body["model"] != "gpt-fake" {
		t.Errorf("first request: %s, model %v", reqs[0].Path, reqs[0].Body["model"])
	}
	if !strings.Contains(developerText(reqs[0]), "MARKER-7431") {
		t.Errorf("the system prompt is not in the developer messages:\n%s", developerText(reqs[0]))
	}

	second := runOnce(thread, "say it again")
	if s := second.Of(backend.EventSession); len(s) == 0 || s[0].SessionID != thread {
		t.Errorf("second run's session = %+v, want thread %s resumed", s, thread)
	}
	reqs = fm.Requests()
	if len(reqs) != 4 || !replays(reqs[2], "function_call", "hi from alice") {
		t.Errorf("the resumed run's first request lacks the first run's tool call (%d requests)", len(reqs))
	}
	var sent []string
	for _, m := range d.Messages() {
		if m.From == "alice" {
			sent = append(sent, m.Content)
		}
	}
	if strings.Join(sent, "|") != "hi from alice|again from alice" {
		t.Errorf("alice sent %q", sent)
	}
}

// Every key this backend writes is one codex knows: --strict-config
// refuses unknown ones, and the flags of a gated run are known too.
// Everything points at closed local ports.
func TestE2ECodexAcceptsConfig(t *testing.T) {
	path := needCodex(t)
	t.Setenv("HOME", t.TempDir())
	cfg := fullConfig
	cfg.BaseURL, cfg.Daemon.URL = "http://127.0.0.1:9/v1", "http://127.0.0.1:9/mcp"
	cfg.Servers = []backend.MCPServer{{Name: "search", URL: "http://127.0.0.1:9/mcp", Headers: map[string]string{"X-Key": "k"}},
		{Name: "local files", Command: []string{"true", "a b"}, Env: map[string]string{"ROOT": "/srv"}}}
	text, err := cfg.render()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"exec", "--strict-config"}, invocation{prompt: "hi", gated: true}.args()[1:]...)...)
	cmd.Env, cmd.Dir = append(os.Environ(), "CODEX_HOME="+home, "OPENAI_API_KEY=x"), t.TempDir()
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), "Error loading config") || !strings.Contains(string(out), `"thread.started"`) {
		t.Errorf("codex did not accept config.toml:\n%s\n%s", text, out)
	}
}

// replays reports whether a request's input holds an item of type typ
// mentioning text: history that only a resumed thread re-sends (the
// prompt's recent activity shows the channel, not tool calls).
func replays(r fakemodel.Request, typ, text string) bool {
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
