package claude

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

func TestModel(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"":                            "",
		"sonnet":                      "sonnet",
		"opus":                        "opus",
		"haiku":                       "haiku",
		"claude-sonnet-4-5":           "claude-sonnet-4-5",
		"anthropic/claude-sonnet-4-5": "claude-sonnet-4-5",
		"anthropic/opus":              "opus",
		"claude-opus-4-1@20250805":    "claude-opus-4-1@20250805",
		"arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-sonnet-4-5-v1:0": "arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-sonnet-4-5-v1:0",
	}
	for in, want := range tests {
		if got := model(in); got != want {
			t.Errorf("model(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	base := []string{"-p", "--output-format", "stream-json", "--verbose"}
	mcp := []string{"--mcp-config", "/run/w/mcp.json", "--strict-mcp-config"}
	tests := map[string]struct {
		in   invocation
		want []string
	}{
		"minimal: no model, no system": {
			invocation{prompt: "hi", mcpConfig: "/run/w/mcp.json"},
			cat(base, mcp, []string{"--allowedTools", "mcp__agent-worker", "--", "hi"}),
		},
		"everything": {
			invocation{prompt: "You are @alice", model: "anthropic/claude-sonnet-4-5", system: "Be brief.", mcpConfig: "/run/w/mcp.json",
				resume: "5b1e7c2a", maxTurns: 7, allowedTools: []string{"Read", "Bash(go test:*)"}},
			cat(base, []string{"--model=claude-sonnet-4-5", "--append-system-prompt=Be brief."}, mcp,
				[]string{"--resume", "5b1e7c2a", "--max-turns", "7", "--allowedTools", "mcp__agent-worker", "Read", "Bash(go test:*)", "--", "You are @alice"}),
		},
		// Each repository of the workspace is one --add-dir, before a flag.
		"repositories": {
			invocation{prompt: "hi", mcpConfig: "/run/w/mcp.json", dirs: []string{"/src/lib", "/data/worktrees/alice/app"}},
			cat(base, []string{"--add-dir=/src/lib", "--add-dir=/data/worktrees/alice/app"}, mcp, []string{"--allowedTools", "mcp__agent-worker", "--", "hi"}),
		},
		// Text that looks like a flag stays a value.
		"dashes": {
			invocation{prompt: "--help", system: "- rule one", model: "sonnet", mcpConfig: "/run/w/mcp.json"},
			cat(base, []string{"--model=sonnet", "--append-system-prompt=- rule one"}, mcp, []string{"--allowedTools", "mcp__agent-worker", "--", "--help"}),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := tc.in.args()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			// Claude Code refuses this flag as root, and this backend never
			// needs it: tools are allowed by name.
			if slices.Contains(got, "--dangerously-skip-permissions") {
				t.Errorf("args contain --dangerously-skip-permissions: %q", got)
			}
		})
	}
}

func cat(parts ...[]string) []string { return slices.Concat(parts...) }

func TestMCPConfig(t *testing.T) {
	t.Parallel()
	req := backend.Request{
		Daemon: backend.MCPServer{Name: "agent-worker", URL: "http://127.0.0.1:5099/mcp", Headers: map[string]string{"Authorization": "Bearer tok"}},
		MCPServers: []backend.MCPServer{
			{Name: "search", URL: "https://search.example/mcp", Headers: map[string]string{"X-Key": "k"}},
		},
	}
	cfg, err := parseConfig(json.RawMessage(`{"mcp_servers": {
		"fs": {"command": ["npx", "-y", "server-fs", "."], "env": {"ROOT": "/src"}},
		"agent-worker": {"url": "http://evil.example/mcp"}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := mcpConfig(req, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]map[string]any{"mcpServers": {
		"agent-worker": {"type": "http", "url": "http://127.0.0.1:5099/mcp", "headers": map[string]any{"Authorization": "Bearer tok"}},
		"search":       {"type": "http", "url": "https://search.example/mcp", "headers": map[string]any{"X-Key": "k"}},
		"fs":           {"type": "stdio", "command": "npx", "args": []any{"-y", "server-fs", "."}, "env": map[string]any{"ROOT": "/src"}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mcp config (-want +got):\n%s", diff)
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		raw     string
		idle    time.Duration
		wantErr string
	}{
		"empty":            {"", DefaultTimeout, ""},
		"null":             {"null", DefaultTimeout, ""},
		"other keys":       {`{"script": [], "provider": {"name": "x"}}`, DefaultTimeout, ""},
		"duration":         {`{"timeout": "90s"}`, 90 * time.Second, ""},
		"seconds":          {`{"timeout": 5}`, 5 * time.Second, ""},
		"bad duration":     {`{"timeout": "soon"}`, 0, "timeout"},
		"negative":         {`{"timeout": "-1s"}`, 0, "positive"},
		"not an object":    {`[1]`, 0, "config"},
		"server w/o url":   {`{"mcp_servers": {"x": {}}}`, 0, "mcp server x"},
		"server with both": {`{"mcp_servers": {"x": {"url": "http://a", "command": ["b"]}}}`, 0, "mcp server x"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := parseConfig(json.RawMessage(tc.raw))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !backend.IsPermanent(err) {
					t.Errorf("parseConfig(%s) = %v, want a permanent error about %q", tc.raw, err, tc.wantErr)
				}
				return
			}
			if err != nil || c.Idle != tc.idle {
				t.Errorf("parseConfig(%s) = idle %v, %v; want %v", tc.raw, c.Idle, err, tc.idle)
			}
		})
	}
}
