package host

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// An sdk agent created without a model gets the daemon's default; without
// the provider's key in the daemon's environment it is still created and
// says which variable to set.
func TestNewAgentTakesTheDefaultModel(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "set")
	th := startHostWith(t, Config{Home: t.TempDir(), Listen: "127.0.0.1:0", DefaultModel: "openai/gpt-4o-mini", PluginsDirs: []string{installed(t, "sdk")}})
	ctx := context.Background()
	a, err := th.client().CreateAgent(ctx, api.AgentSpec{Name: "alice"})
	if err != nil {
		t.Fatalf("create alice without backend or model: %v", err)
	}
	if a.Backend != "sdk" || a.Model != "openai/gpt-4o-mini" {
		t.Errorf("alice = %s/%s, want sdk/openai/gpt-4o-mini", a.Backend, a.Model)
	}
	if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "OPENAI_API_KEY is not set in the daemon's environment") {
		t.Errorf("alice's warnings = %q, want OPENAI_API_KEY named", a.Warnings)
	}
	if got, err := th.client().GetAgent(ctx, api.Target{Agent: "alice", Workflow: api.GlobalWorkflow, Tag: api.DefaultTag}); err != nil || len(got.Warnings) != 1 {
		t.Errorf("GET alice warnings = %q, %v; want the same warning", got.Warnings, err)
	}
	// status names the variable to set too.
	if hl, err := th.client().Health(ctx); err != nil || !slices.ContainsFunc(hl.Problems, func(p string) bool {
		return strings.HasPrefix(p, "agent alice: OPENAI_API_KEY is not set")
	}) {
		t.Errorf("status problems = %q, %v; want alice's missing OPENAI_API_KEY", hl.Problems, err)
	}
	// A workflow's sdk agent without model: gets the same default.
	file := filepath.Join(t.TempDir(), "team.yaml")
	if err := os.WriteFile(file, []byte("name: team\nagents:\n  carol: {backend: sdk}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatalf("start a workflow whose sdk agent has no model: %v", err)
	}
	if c, err := th.client().GetAgent(ctx, api.Target{Agent: "carol", Workflow: "team", Tag: api.DefaultTag}); err != nil || c.Model != "openai/gpt-4o-mini" {
		t.Errorf("carol@team model = %q, %v; want the daemon's default openai/gpt-4o-mini", c.Model, err)
	}
	// An explicit model wins, and a key that is set means no warning.
	b, err := th.client().CreateAgent(ctx, api.AgentSpec{Name: "bob", Model: "anthropic/claude-haiku-4-5"})
	if err != nil || b.Model != "anthropic/claude-haiku-4-5" || len(b.Warnings) != 0 {
		t.Errorf("bob = %s, warnings %q, %v; want his own model and no warning", b.Model, b.Warnings, err)
	}
}

// A --listen address other machines can reach needs --allow-remote.
func TestListenBeyondLoopbackNeedsAllowRemote(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Home: t.TempDir(), Listen: "0.0.0.0:0"})
	if api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(err.Error(), "--allow-remote") || !strings.Contains(err.Error(), "full control") {
		t.Fatalf("New on 0.0.0.0 without AllowRemote = %v; want an invalid error naming --allow-remote and why", err)
	}
	th := startHostWith(t, Config{Home: t.TempDir(), Listen: "0.0.0.0:0", AllowRemote: true, InsecureHTTP: true})
	if _, err := th.client().Health(context.Background()); err != nil {
		t.Errorf("daemon with --allow-remote --insecure-http: %v", err)
	}
	if got := th.Info().Host; got != "127.0.0.1" {
		t.Errorf("daemon.json host = %q, want local clients (and runs) to use 127.0.0.1", got)
	}
}

func TestReachableFromOutside(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"127.0.0.1:5099": false, "localhost:0": false, "[::1]:0": false, "127.0.0.2:80": false,
		":5099": true, "0.0.0.0:0": true, "[::]:0": true, "192.0.2.1:80": true,
	}
	for listen, want := range tests {
		if got := reachableFromOutside(listen); got != want {
			t.Errorf("reachableFromOutside(%q) = %v, want %v", listen, got, want)
		}
	}
}
