package codex

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// fullConfig exercises every part of config.toml, with values that need
// escaping.
var fullConfig = homeConfig{
	Model:   "openai/gpt-5-codex",
	System:  "You are \"Bob\" (C:\\bob).\n\tReview\x01 every PR — carefully.",
	Sandbox: "workspace-write",
	BaseURL: "http://127.0.0.1:9/v1",
	Daemon: backend.MCPServer{Name: "agent-worker", URL: "http://127.0.0.1:5099/mcp",
		Headers: map[string]string{"Authorization": "Bearer secret", "X-Trace": "on"}},
	Servers: []backend.MCPServer{
		{Name: "search", URL: "https://search.example/mcp", Headers: map[string]string{"X-Key": `k"1`}},
		{Name: "local files", Command: []string{"npx", "-y", "@mcp/files", "/srv/a b"}, Env: map[string]string{"ROOT": "/srv"}},
	},
	WritableRoots: []string{"/data/worktrees/bob/app", "/srv/\"quoted\" repo"},
	OTel:          otelFromEnv(func(k string) string { return envMap{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"}[k] }),
}

type envMap = map[string]string

// The collector the run's environment names reaches Codex's [otel]: over
// HTTP with each signal's path, over gRPC as given, a traces endpoint of
// its own as given; no collector, no [otel].
func TestOTelFromEnv(t *testing.T) {
	t.Parallel()
	get := func(m envMap) func(string) string { return func(k string) string { return m[k] } }
	if o := otelFromEnv(get(envMap{})); o != nil {
		t.Errorf("no collector: %+v", o)
	}
	for name, c := range map[string]struct {
		env          envMap
		logs, traces string
	}{
		"http": {envMap{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
			`{ otlp-http = { endpoint = "http://c:4318/v1/logs", protocol = "binary" } }`, `{ otlp-http = { endpoint = "http://c:4318/v1/traces", protocol = "binary" } }`},
		"grpc": {envMap{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			`{ otlp-grpc = { endpoint = "http://c:4317" } }`, `{ otlp-grpc = { endpoint = "http://c:4317" } }`},
		"traces only": {envMap{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4318/v1/traces"},
			"", `{ otlp-http = { endpoint = "http://t:4318/v1/traces", protocol = "binary" } }`},
	} {
		o := otelFromEnv(get(c.env))
		if got := o.exporter("logs"); got != c.logs {
			t.Errorf("%s: logs exporter = %s, want %s", name, got, c.logs)
		}
		if got := o.exporter("traces"); got != c.traces {
			t.Errorf("%s: traces exporter = %s, want %s", name, got, c.traces)
		}
	}
}

func TestConfigGolden(t *testing.T) {
	t.Parallel()
	got, err := fullConfig.render()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "config.golden.toml", got)
	if strings.Contains(got, "secret") {
		t.Error("the daemon's token is written into config.toml; it belongs in " + tokenEnv)
	}
}

func TestConfigMinimal(t *testing.T) {
	t.Parallel()
	got, err := homeConfig{Sandbox: "read-only", Daemon: backend.MCPServer{URL: "http://d/mcp"}}.render()
	if err != nil {
		t.Fatal(err)
	}
	want := `# Written by agent-worker for one codex run.
approval_policy = "never"
sandbox_mode = "read-only"

[mcp_servers.agent-worker]
url = "http://d/mcp"
default_tools_approval_mode = "approve"
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("no model, system prompt or base URL: Codex keeps its defaults (-want +got):\n%s", diff)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		servers []backend.MCPServer
		want    string
	}{
		"the daemon's name": {[]backend.MCPServer{{Name: "agent-worker", URL: "http://x"}}, `"agent-worker" is configured twice`},
		"twice":             {[]backend.MCPServer{{Name: "a", URL: "http://x"}, {Name: "a", URL: "http://y"}}, `"a" is configured twice`},
		"neither":           {[]backend.MCPServer{{Name: "a"}}, "neither a url nor a command"},
	}
	for name, tc := range tests {
		_, err := homeConfig{Servers: tc.servers}.render()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}

func TestTOMLString(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"plain":        `"plain"`,
		`q"b\`:         `"q\"b\\"`,
		"a\nb\tc\r":    `"a\nb\tc\r"`,
		"\x00\x1f\x7f": `"\u0000\u001F\u007F"`,
		"é—🙂":          `"é—🙂"`,
		"bad\xffutf8":  `"bad` + "\uFFFD" + `utf8"`,
	}
	for in, want := range tests {
		if got := str(in); got != want {
			t.Errorf("str(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestModel(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"":                   "",
		"openai":             "",
		"openai/gpt-5-codex": "gpt-5-codex",
		"openai:o3":          "o3",
		"gpt-5":              "gpt-5",
		// Another provider's name may be valid at a custom base_url
		// (an OpenRouter-style gateway), so it passes through.
		"anthropic/claude-sonnet-4-5": "anthropic/claude-sonnet-4-5",
	}
	for in, want := range tests {
		if got := model(in); got != want {
			t.Errorf("model(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseOptions(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		config string
		want   options
		err    string
	}{
		"none":            {config: ``, want: options{Timeout: duration(10 * time.Minute), Sandbox: "workspace-write"}},
		"duration string": {config: `{"timeout": "90s", "sandbox": "read-only"}`, want: options{Timeout: duration(90 * time.Second), Sandbox: "read-only"}},
		"seconds":         {config: `{"timeout": 2.5}`, want: options{Timeout: duration(2500 * time.Millisecond), Sandbox: "workspace-write"}},
		"all": {config: `{"cli": "/opt/codex", "base_url": "http://m/v1", "env_key": "MY_KEY", "script": "ignored"}`,
			want: options{CLI: "/opt/codex", BaseURL: "http://m/v1", EnvKey: "MY_KEY", Timeout: duration(10 * time.Minute), Sandbox: "workspace-write"}},
		"bad timeout": {config: `{"timeout": "soon"}`, err: "timeout"},
		"bad sandbox": {config: `{"sandbox": "none"}`, err: `sandbox "none"`},
		"sandbox_mode": {config: `{"sandbox_mode": "danger-full-access"}`,
			want: options{Timeout: duration(10 * time.Minute), Sandbox: "danger-full-access"}},
		"sandbox_mode wins": {config: `{"sandbox": "danger-full-access", "sandbox_mode": "read-only"}`,
			want: options{Timeout: duration(10 * time.Minute), Sandbox: "read-only"}},
		// The agent's sandbox policy travels in the same config as an
		// object: Codex keeps its default mode, or takes sandbox_mode.
		"policy object": {config: `{"sandbox": {"read": ["/data"], "network": "all"}}`,
			want: options{Timeout: duration(10 * time.Minute), Sandbox: "workspace-write"}},
		"policy and sandbox_mode": {config: `{"sandbox": {"mode": "on"}, "sandbox_mode": "read-only"}`,
			want: options{Timeout: duration(10 * time.Minute), Sandbox: "read-only"}},
		"bad sandbox_mode":   {config: `{"sandbox_mode": "off"}`, err: `sandbox_mode "off": use read-only`},
		"sandbox_mode list":  {config: `{"sandbox_mode": ["read-only"]}`, err: "sandbox_mode: want one of"},
		"sandbox not a mode": {config: `{"sandbox": 1}`, err: "sandbox: want Codex's sandbox mode as a string"},
		"not object":         {config: `[1]`, err: "config"},
	}
	for name, tc := range tests {
		got, err := parseOptions([]byte(tc.config))
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		default:
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", name, diff)
			}
		}
	}
}

func TestExecArgs(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   invocation
		want []string
	}{
		"new thread": {invocation{prompt: "hi"}, []string{"exec", "--json", "--skip-git-repo-check", "--disable", "unbounded_connection_retries", "--", "hi"}},
		"resume": {invocation{resume: "0199-abc", prompt: "-hi"}, []string{"exec", "resume", "--json", "--skip-git-repo-check", "--disable", "unbounded_connection_retries",
			"--", "0199-abc", "-hi"}},
		"gated": {invocation{prompt: "hi", gated: true}, []string{"exec", "--json", "--skip-git-repo-check", "--disable", "unbounded_connection_retries",
			"--enable", "hooks", "--dangerously-bypass-hook-trust", "--", "hi"}},
	}
	for name, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.in.args()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

func TestArgPrompt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if got, err := argPrompt("short", dir); err != nil || got != "short" {
		t.Errorf("a short prompt became %q, %v", got, err)
	}
	long := strings.Repeat("x", maxArg+1)
	got, err := argPrompt(long, dir)
	if err != nil || !strings.Contains(got, filepath.Join(dir, "prompt.md")) {
		t.Fatalf("argPrompt(long) = %q, %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "prompt.md")); err != nil || string(b) != long {
		t.Errorf("the long prompt did not land in prompt.md (%d bytes, %v)", len(b), err)
	}
}
