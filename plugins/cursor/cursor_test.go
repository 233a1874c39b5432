package cursor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
)

// standin is the scripted cursor-agent (testdata/cursor-agent), built once
// per test process.
var standin string

func TestMain(m *testing.M) {
	var err error
	if standin, err = testkit.BuildE("plugins/cursor/testdata/cursor-agent"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testkit.Main(m)
}

// withConfig sets the agent's config, pointing "cli" at the stand-in
// unless it names another.
func withConfig(t *testing.T, req backend.Request, cfg map[string]any) backend.Request {
	t.Helper()
	if _, ok := cfg["cli"]; !ok {
		cfg["cli"] = standin
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req.Agent.Config = b
	return req
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(*testing.T) backend.Backend { return New() },
		backendtest.WithRequest(func(r backend.Request) backend.Request {
			r.Agent.Config = json.RawMessage(fmt.Sprintf(`{"cli": %q}`, standin))
			return r
		}),
		backendtest.WithHangingRequest(func(r backend.Request) backend.Request {
			r.Agent.Config = json.RawMessage(fmt.Sprintf(`{"cli": %q, "env": {"STANDIN_MODE": "hang"}}`, standin))
			return r
		}))
}

// cursorServer is one entry of the .cursor/mcp.json the backend writes.
type cursorServer struct {
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// record is what the stand-in saw (STANDIN_RECORD).
type record struct {
	Args    []string `json:"args"`
	Cwd     string   `json:"cwd"`
	Prompt  string   `json:"prompt"`
	Model   string   `json:"model"`
	Resume  string   `json:"resume"`
	MCPJSON struct {
		MCPServers map[string]cursorServer `json:"mcpServers"`
	} `json:"mcp_json"`
}

// runStandin runs req against the stand-in, recording what it saw.
func runStandin(t *testing.T, req backend.Request, cfg map[string]any) (*backendtest.Recorder, record, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "record.json")
	env, _ := cfg["env"].(map[string]any)
	if env == nil {
		env = map[string]any{}
	}
	env["STANDIN_RECORD"] = file
	cfg["env"] = env
	req = withConfig(t, req, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ev := &backendtest.Recorder{}
	err := New().Run(ctx, req, ev)
	var rec record
	if b, rerr := os.ReadFile(file); rerr == nil {
		if jerr := json.Unmarshal(b, &rec); jerr != nil {
			t.Fatalf("stand-in record: %v", jerr)
		}
	}
	return ev, rec, err
}

// A run as a user sees it: the stand-in is asked headlessly with the
// system prompt, reaches the daemon as the agent with the run's token,
// replies in the channel, and nothing is written into the project.
func TestRunRepliesThroughTheDaemon(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Post("user", "@carol please summarise the README")
	req := d.Request("carol")
	req.Agent.System = "You are terse."
	req.Agent.Model = "anthropic/claude-sonnet-4-5"
	ev, rec, err := runStandin(t, req, map[string]any{})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}

	var replies []string
	for _, m := range d.Messages() {
		if m.From == "carol" {
			replies = append(replies, m.Content)
		}
	}
	if !slices.Equal(replies, []string{"cursor stand-in handled 1 message(s)"}) {
		t.Errorf("carol's messages = %q", replies)
	}
	for _, want := range []string{"-p", "--force", "--approve-mcps", "stream-json"} {
		if !slices.Contains(rec.Args, want) {
			t.Errorf("args %q lack %s", rec.Args, want)
		}
	}
	if rec.Model != "sonnet-4.5" {
		t.Errorf("--model %q, want sonnet-4.5", rec.Model)
	}
	if !strings.HasPrefix(rec.Prompt, "## System\nYou are terse.\n") || !strings.Contains(rec.Prompt, req.ProjectDir) ||
		!strings.Contains(rec.Prompt, "please summarise the README") {
		t.Errorf("prompt:\n%s", rec.Prompt)
	}
	srv := rec.MCPJSON.MCPServers["agent-worker"]
	if srv.URL != req.Daemon.URL || srv.Headers["Authorization"] != req.Daemon.Headers["Authorization"] {
		t.Errorf("mcp.json agent-worker = %+v", srv)
	}
	if rec.Cwd == req.ProjectDir || strings.HasPrefix(rec.Cwd, req.ProjectDir) {
		t.Errorf("cursor-agent ran in the project %s", rec.Cwd)
	}
	if entries, err := os.ReadDir(req.ProjectDir); err != nil || len(entries) != 0 {
		t.Errorf("the project got files: %v, %v", entries, err)
	}
	if _, err := os.Stat(rec.Cwd); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the workspace %s (with the run's token) is left after the run: %v", rec.Cwd, err)
	}

	if s := ev.Of(backend.EventSession); len(s) != 1 || !strings.HasPrefix(s[0].SessionID, "chat-") {
		t.Errorf("session events = %+v", s)
	}
	calls, results := ev.Of(backend.EventToolCall), ev.Of(backend.EventToolResult)
	if len(calls) != 1 || calls[0].Tool.Name != "channel_send" || len(results) != 1 || results[0].Tool.Result != "sent as #2" {
		t.Errorf("tool events: calls %+v, results %+v", calls, results)
	}
	if r := ev.Of(backend.EventResult); len(r) != 1 || r[0].Text != "Replied to the team." {
		t.Errorf("result events = %+v", r)
	}
	var stderr bool
	for _, l := range ev.Of(backend.EventLog) {
		stderr = stderr || strings.HasPrefix(l.Text, "stand-in: workspace")
	}
	if !stderr {
		t.Errorf("the CLI's stderr is not in the log events: %+v", ev.Of(backend.EventLog))
	}
}

// --resume carries the daemon's session, and every run of an agent has the
// same working directory, which is how cursor-agent finds the chat.
func TestResume(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	_, first, err := runStandin(t, d.Request("carol"), map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	req := d.Request("carol")
	req.ResumeSession = "chat-42"
	ev, second, err := runStandin(t, req, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if second.Resume != "chat-42" {
		t.Errorf("--resume %q, want chat-42 (args %q)", second.Resume, second.Args)
	}
	if s := ev.Of(backend.EventSession); len(s) != 1 || s[0].SessionID != "chat-42" {
		t.Errorf("session events = %+v", s)
	}
	if first.Cwd != second.Cwd {
		t.Errorf("working directories differ between runs (%s, %s): --resume would not find the chat", first.Cwd, second.Cwd)
	}
	if _, other, err := runStandin(t, d.Request("dave"), map[string]any{}); err != nil || other.Cwd == first.Cwd {
		t.Errorf("carol and dave share the workspace %s, %v", other.Cwd, err)
	}
}

// A chat cursor-agent no longer has must not fail the agent forever.
func TestResumeOfALostChatStartsANewOne(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	req := d.Request("carol")
	req.ResumeSession = "chat-gone"
	ev, rec, err := runStandin(t, req, map[string]any{"env": map[string]any{"STANDIN_MODE": "bad-resume"}})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if rec.Resume != "" {
		t.Errorf("the second try resumed %q", rec.Resume)
	}
	if s := ev.Of(backend.EventSession); len(s) != 1 || s[0].SessionID == "chat-gone" {
		t.Errorf("session events = %+v", s)
	}
	var said bool
	for _, l := range ev.Of(backend.EventLog) {
		said = said || strings.Contains(l.Text, "starting a new chat")
	}
	if !said {
		t.Error("no log event says the chat was started afresh")
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg       map[string]any
		says      string
		permanent bool
	}{
		"exit status":     {map[string]any{"env": map[string]any{"STANDIN_MODE": "fail"}}, "invalid API key", false},
		"error result":    {map[string]any{"env": map[string]any{"STANDIN_MODE": "error-result"}}, "model quota exceeded", false},
		"no result":       {map[string]any{"env": map[string]any{"STANDIN_MODE": "no-result"}}, "Workspace Trust Required", false},
		"idle":            {map[string]any{"timeout": "300ms", "env": map[string]any{"STANDIN_MODE": "hang"}}, "no output for 300ms", false},
		"missing cli":     {map[string]any{"cli": "no-such-cursor-agent"}, "curl https://cursor.com/install -fsS | bash", true},
		"bad timeout":     {map[string]any{"timeout": "soon"}, "timeout", true},
		"bad mcp server":  {map[string]any{"mcp_servers": map[string]any{"x": map[string]any{}}}, "url or command", true},
		"unknown cli arg": {map[string]any{"args": []string{"--bogus"}}, "unknown option '--bogus'", false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			d.Post("user", "@carol hi")
			ev, _, err := runStandin(t, d.Request("carol"), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Run = %v, want an error saying %q", err, tc.says)
			}
			if backend.IsPermanent(err) != tc.permanent {
				t.Errorf("permanent = %v, want %v (%v)", backend.IsPermanent(err), tc.permanent, err)
			}
			if r := ev.Of(backend.EventResult); len(r) != 0 {
				t.Errorf("a failed run sent results %+v", r)
			}
		})
	}
}

// The agent's own MCP servers (request and config) join the daemon's in
// mcp.json; none can replace the daemon's entry and its token.
func TestMCPConfig(t *testing.T) {
	t.Parallel()
	req := backend.Request{
		Daemon: backend.MCPServer{Name: "agent-worker", URL: "http://127.0.0.1:5099/mcp", Headers: map[string]string{"Authorization": "Bearer run-token"}},
		MCPServers: []backend.MCPServer{
			{Name: "docs", URL: "https://docs.example/mcp", Headers: map[string]string{"X-Key": "k"}},
			{Name: "agent-worker", URL: "http://evil/mcp"},
		},
	}
	cfg, err := parseConfig(json.RawMessage(`{"mcp_servers": {"fs": {"command": ["npx", "-y", "server-fs", "/src"], "env": {"A": "1"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := mcpConfig(req, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		MCPServers map[string]cursorServer `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]cursorServer{
		"agent-worker": {URL: "http://127.0.0.1:5099/mcp", Headers: map[string]string{"Authorization": "Bearer run-token"}},
		"docs":         {URL: "https://docs.example/mcp", Headers: map[string]string{"X-Key": "k"}},
		"fs":           {Command: "npx", Args: []string{"-y", "server-fs", "/src"}, Env: map[string]string{"A": "1"}},
	}
	if diff := cmp.Diff(want, got.MCPServers); diff != "" {
		t.Errorf("mcp.json servers (-want +got):\n%s", diff)
	}
}
