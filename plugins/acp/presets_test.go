package acp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/plugins/clis"
	"github.com/agent-worker/agent-worker/plugins/internal/cli"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/sandbox"
)

// A preset runs its CLI's ACP command when the agent's config names
// none, and the agent's own command when it does.
func TestPresetRunsItsCommand(t *testing.T) {
	d := backendtest.NewDaemon(t)
	rec := filepath.Join(t.TempDir(), "record.jsonl")
	script, _ := json.Marshal([]map[string]any{{"text": "hello from the preset"}})
	req := d.Request("carol")
	req.ProjectDir = t.TempDir()
	req.Agent.Config, _ = json.Marshal(map[string]any{"env": map[string]string{"FAKEACP_SCRIPT": string(script),
		"FAKEACP_DIR": t.TempDir(), "FAKEACP_RECORD": rec}})
	b := NewPreset(clis.CLI{Backend: "fake", Command: fake, ACP: []string{"--acp"}})
	ev := &backendtest.Recorder{}
	if err := b.Run(timeout(t), req, ev); err != nil {
		t.Fatal(err)
	}
	if got := texts(ev.Events(), backend.EventText); !strings.Contains(got, "hello from the preset") {
		t.Errorf("text: %q", got)
	}
	if _, ok := find(readRecord(t, rec), "session/prompt"); !ok {
		t.Error("the preset's command was not prompted")
	}

	// gemini's preset with config command: the config's command runs.
	req.Agent.Config, _ = json.Marshal(map[string]any{"command": []string{fake}, "env": map[string]string{"FAKEACP_SCRIPT": string(script),
		"FAKEACP_DIR": t.TempDir(), "FAKEACP_RECORD": rec}})
	ev = &backendtest.Recorder{}
	if err := NewPreset(clis.Gemini).Run(timeout(t), req, ev); err != nil {
		t.Fatal(err)
	}
	if got := texts(ev.Events(), backend.EventText); !strings.Contains(got, "hello from the preset") {
		t.Errorf("text with config command: %q", got)
	}
}

// A preset whose CLI is not installed fails permanently, saying how to
// install the version the tests run.
func TestPresetMissingSaysHowToInstall(t *testing.T) {
	d := backendtest.NewDaemon(t)
	t.Setenv("PATH", t.TempDir())
	req := d.Request("carol")
	req.Agent.Config = json.RawMessage(`{}`)
	err := NewPreset(clis.Gemini).Run(context.Background(), req, &backendtest.Recorder{})
	if err == nil || !backend.IsPermanent(err) || !strings.Contains(err.Error(), "gemini CLI not found") ||
		!strings.Contains(err.Error(), "npm install -g @google/gemini-cli@0.61.0") {
		t.Errorf("Run = %v", err)
	}
	if s := PresetStatus(clis.Gemini)(context.Background()); s != "missing: npm install -g @google/gemini-cli@0.61.0" {
		t.Errorf("status = %q", s)
	}
}

// An adapter installed from npm, which has no --version, is reported at
// its package's version.
func TestPresetStatusReadsThePackageVersion(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "node_modules", "@zed-industries", "claude-agent-acp")
	if err := os.MkdirAll(filepath.Join(pkg, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name": "@zed-industries/claude-agent-acp", "version": "0.23.1"}`), 0o644)
	os.WriteFile(filepath.Join(pkg, "dist", "index.js"), []byte("#!/bin/sh\nexit 0\n"), 0o755)
	bin := filepath.Join(root, "node_modules", ".bin")
	os.MkdirAll(bin, 0o755)
	if err := os.Symlink("../@zed-industries/claude-agent-acp/dist/index.js", filepath.Join(bin, "claude-agent-acp")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	if s := PresetStatus(clis.ClaudeACP)(context.Background()); s != "claude-agent-acp 0.23.1 at "+filepath.Join(bin, "claude-agent-acp") {
		t.Errorf("status = %q, want claude-agent-acp 0.23.1", s)
	}
}

// The session's cumulative cost (usage_update) is charged to each run by
// what the run added: the second run of a loaded session is charged its
// own turn, not the session's total.
func TestRunCostIsWhatTheTurnAdded(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	a := agentRun{script: []map[string]any{{"cost": 0.25}, {"usage": []int{100, 10}}, {"text": "ok"}}, dir: t.TempDir()}
	req := d.Request("carol")
	req.StateDir = t.TempDir()
	usage := func(es []backend.Event) (backend.Usage, string) {
		var u backend.Usage
		var session string
		for _, e := range es {
			if e.Kind == backend.EventUsage {
				u = *e.Usage
			}
			if e.Kind == backend.EventSession {
				session = e.SessionID
			}
		}
		return u, session
	}
	es, _, err := a.run(t, timeout(t), req)
	if err != nil {
		t.Fatal(err)
	}
	u, session := usage(es)
	if u.CostUSD != 0.25 || u.InputTokens != 100 || u.OutputTokens != 10 {
		t.Errorf("first run's usage = %+v, want $0.25, 100 in, 10 out", u)
	}
	req.ResumeSession = session
	a.script = []map[string]any{{"cost": 0.10}, {"text": "ok"}}
	if es, _, err = a.run(t, timeout(t), req); err != nil {
		t.Fatal(err)
	}
	if u, _ := usage(es); u.CostUSD < 0.0999 || u.CostUSD > 0.1001 {
		t.Errorf("second run's cost = %v, want 0.10 (the session's 0.35 less the first run's 0.25)", u.CostUSD)
	}
}

// A confined run of claude-acp keeps Claude Code's config in the agent's
// state directory (the sandbox grants no ~/.claude), unless the agent's
// env names one; an unconfined run uses the user's.
func TestPresetConfigDir(t *testing.T) {
	t.Parallel()
	b := NewPreset(clis.ClaudeACP)
	state := t.TempDir()
	confined := backend.Request{StateDir: state, Sandbox: sandbox.Policy{Read: []string{"/usr"}, Write: []string{state}}}
	dir, err := b.configDir(confined, nil)
	if want := filepath.Join(state, "config"); err != nil || dir != want {
		t.Errorf("configDir = %q, %v; want %q", dir, err, want)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("the config dir is not made 0700: %v %v", fi, err)
	}
	if dir, _ := b.configDir(confined, map[string]string{"CLAUDE_CONFIG_DIR": "/mine"}); dir != "" {
		t.Errorf("with the agent's own CLAUDE_CONFIG_DIR: %q, want none", dir)
	}
	if dir, _ := b.configDir(backend.Request{StateDir: state}, nil); dir != "" {
		t.Errorf("unconfined: %q, want none", dir)
	}
	if dir, _ := NewPreset(clis.OpenCode).configDir(confined, nil); dir != "" {
		t.Errorf("opencode: %q, want none", dir)
	}
}

// The gemini preset's home is seeded with settings that keep it from
// calling home, once (the agent's own edits stay); its env trusts the
// workspace where the agent's env does not say otherwise; and it is
// offered no client file system unless the config asks for one.
func TestPresetGeminiDefaults(t *testing.T) {
	t.Parallel()
	b := NewPreset(clis.Gemini)
	state := t.TempDir()
	confined := backend.Request{StateDir: state, Sandbox: sandbox.Policy{Read: []string{"/usr"}, Write: []string{state}}}
	dir, err := b.configDir(confined, nil)
	if err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(dir, ".gemini", "settings.json")
	if b, err := os.ReadFile(settings); err != nil || !strings.Contains(string(b), `"usageStatisticsEnabled": false`) {
		t.Errorf("settings: %s %v", b, err)
	}
	os.WriteFile(settings, []byte(`{"mine": true}`), 0o600)
	if _, err := b.configDir(confined, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(settings); string(b) != `{"mine": true}` {
		t.Errorf("the agent's settings were written over: %s", b)
	}

	cfg := config{Settings: cli.Settings{Env: map[string]string{"GEMINI_TELEMETRY_ENABLED": "true"}}}
	b.presetDefaults(&cfg)
	if cfg.Env["GEMINI_CLI_TRUST_WORKSPACE"] != "true" || cfg.Env["GEMINI_TELEMETRY_ENABLED"] != "true" || cfg.fs() {
		t.Errorf("defaults: env %v, fs %v", cfg.Env, cfg.fs())
	}
	on := true
	cfg = config{FS: &on}
	b.presetDefaults(&cfg)
	if !cfg.fs() {
		t.Error("fs: true in the config was overridden")
	}
}

// A permission request for one of the daemon's own MCP tools reaches the
// gate under the tool's name, however the agent titles it.
func TestDaemonToolNames(t *testing.T) {
	t.Parallel()
	for title, want := range map[string]string{
		"mcp__agent-worker__channel_send":        "channel_send",
		"mcp__agent_worker__channel_send":        "channel_send",
		"mcp_agent-worker_channel_send":          "channel_send",
		"channel_send (agent-worker MCP Server)": "channel_send",
		"mcp__github__create_issue":              "mcp__github__create_issue",
		"Write":                                  "Write",
		"mcp__agent-worker__":                    "mcp__agent-worker__",
	} {
		if got := daemonTool(title); got != want {
			t.Errorf("daemonTool(%q) = %q, want %q", title, got, want)
		}
	}
}
