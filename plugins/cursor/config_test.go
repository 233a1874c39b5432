package cursor

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

func TestModel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                   "",
		"auto":                               "auto",
		"sonnet-4.5":                         "sonnet-4.5",
		"anthropic/claude-sonnet-4-5":        "sonnet-4.5",
		"anthropic:claude-opus-4-1-20250805": "opus-4.1",
		"claude-sonnet-4-20250514":           "sonnet-4",
		"claude-sonnet-4-5-thinking":         "sonnet-4.5-thinking",
		"openai/gpt-5":                       "gpt-5",
		"cursor/composer-1":                  "composer-1",
		"claude-3-5-sonnet-20241022":         "claude-3-5-sonnet-20241022",
	} {
		if got := model(in); got != want {
			t.Errorf("model(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	base := []string{"-p", "--output-format", "stream-json", "--force", "--approve-mcps", "--workspace", "/ws"}
	for name, tc := range map[string]struct {
		model, resume string
		extra         []string
		want          []string
	}{
		"fresh":       {"", "", nil, append(base[:len(base):len(base)], "hi")},
		"model":       {"openai/gpt-5", "", nil, append(base[:len(base):len(base)], "--model", "gpt-5", "hi")},
		"resume":      {"", "chat-1", nil, append(base[:len(base):len(base)], "--resume", "chat-1", "hi")},
		"config args": {"auto", "c", []string{"--trust"}, append(base[:len(base):len(base)], "--model", "auto", "--resume", "c", "--trust", "hi")},
	} {
		req := backend.Request{Agent: backend.Agent{Model: tc.model}}
		if diff := cmp.Diff(tc.want, cmdArgs(req, config{Args: tc.extra}, "/ws", "hi", tc.resume)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		``:                                DefaultTimeout,
		`null`:                            DefaultTimeout,
		`{}`:                              DefaultTimeout,
		`{"timeout": "90s"}`:              90 * time.Second,
		`{"timeout": 30}`:                 30 * time.Second,
		`{"timeout": null, "script": []}`: DefaultTimeout,
	} {
		c, err := parseConfig(json.RawMessage(in))
		if err != nil || c.Idle != want {
			t.Errorf("parseConfig(%s) = %v, %v; want idle %v", in, c.Idle, err, want)
		}
	}
	for _, in := range []string{`[]`, `{"timeout": "-1s"}`, `{"timeout": true}`, `{"cli": 3}`, `{"mcp_servers": {"a": {"url": "u", "command": ["c"]}}}`} {
		if _, err := parseConfig(json.RawMessage(in)); err == nil || !backend.IsPermanent(err) {
			t.Errorf("parseConfig(%s) = %v, want a permanent error", in, err)
		}
	}
}

func TestBuildPrompt(t *testing.T) {
	t.Parallel()
	req := backend.Request{Agent: backend.Agent{System: "  Be brief.\n"}, ProjectDir: "/src/app"}
	got := buildPrompt(req, "You are @carol.")
	if !strings.HasPrefix(got, "## System\nBe brief.\n\n## Where to work\nThe project is /src/app.") || !strings.HasSuffix(got, "\n\nYou are @carol.") {
		t.Errorf("prompt:\n%s", got)
	}
	if got := buildPrompt(backend.Request{}, "You are @carol."); got != "You are @carol." {
		t.Errorf("prompt without system or project: %q", got)
	}
}
