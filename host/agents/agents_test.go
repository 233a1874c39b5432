package agents

import (
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	"github.com/agent-worker/agent-worker/store"
)

// catalog is a plugin catalog with working backend plugins, the
// first-party mock and sdk and a third party's local, and one broken one.
type catalog struct{}

func (catalog) Names(kind string) []string {
	if kind == plugin.KindBackend {
		return []string{"broken", "local", "mock", "sdk"}
	}
	return nil
}

func (catalog) Dirs() []string { return []string{"/opt/aw/bin", "/home/u/.agent-worker/plugins.d"} }

func (catalog) Unusable(kind, name string) error {
	if kind == plugin.KindBackend && name == "broken" {
		return api.Errorf(api.CodeInvalid, "backend plugin \"broken\" cannot be used: exec format error")
	}
	return nil
}

// One resolver: aliases and case, first-party backends, external,
// installed plugins; a broken or missing one, first-party or not, says
// what to do, and a likely typo what was meant.
func TestResolveBackend(t *testing.T) {
	t.Parallel()
	tests := map[string]string{"": "sdk", "default": "sdk", "Default": "sdk", "MOCK": "mock", "external": "external",
		"local": "local", "gone": `unknown backend "gone": use one of acp, broken, claude, claude-acp, codex, codex-acp, cursor, external, gemini, local, mock, opencode, sdk, or install agent-worker-backend-gone`,
		"claude": `backend "claude" is not installed: no agent-worker-backend-claude in /opt/aw/bin, /home/u/.agent-worker/plugins.d. ` +
			"Install it beside agent-worker with `go install github.com/agent-worker/agent-worker/cmd/agent-worker-backend-claude@latest`",
		"broken": "cannot be used: exec format error",
		"Moc":    `unknown backend "Moc": did you mean "mock"?`, "lcoal": `unknown backend "lcoal": did you mean "local"?`}
	for word, want := range tests {
		got, err := ResolveBackend(catalog{}, word)
		if err != nil {
			got = err.Error()
			if api.ErrorCode(err) != api.CodeInvalid {
				t.Errorf("ResolveBackend(%q): code %s, want invalid", word, api.ErrorCode(err))
			}
		}
		if !strings.Contains(got, want) {
			t.Errorf("ResolveBackend(%q) = %q, want %q", word, got, want)
		}
	}
}

func TestAgentWarnings(t *testing.T) {
	t.Parallel()
	env := map[string]string{"ANTHROPIC_API_KEY": "k"}
	tests := map[string]struct {
		agent store.Agent
		want  string // "" for no warning
	}{
		"key set":          {store.Agent{Backend: "sdk", Model: "anthropic/claude-sonnet-4-5"}, ""},
		"key missing":      {store.Agent{Backend: "sdk", Model: "groq/llama-3.3-70b"}, "GROQ_API_KEY is not set"},
		"key in agent env": {store.Agent{Backend: "sdk", Model: "groq/llama", Config: backend.AgentConfig{Env: map[string]string{"GROQ_API_KEY": "x"}}}, ""},
		"provider's key":   {store.Agent{Backend: "sdk", Model: "m", Config: backend.AgentConfig{Provider: &backend.Provider{Name: "local", APIKeyEnv: "LOCAL_KEY"}}}, "LOCAL_KEY is not set"},
		"no key needed":    {store.Agent{Backend: "sdk", Model: "ollama/llama3.2"}, ""},
		"other backend":    {store.Agent{Backend: "mock", Model: "groq/llama"}, ""},
		"plugin installed": {store.Agent{Backend: "local"}, ""},
		"plugin removed":   {store.Agent{Backend: "gone"}, `unknown backend "gone": use one of`},
		"plugin broken":    {store.Agent{Backend: "broken"}, "cannot be used: exec format error"},
		"not installed":    {store.Agent{Backend: "codex"}, `backend "codex" is not installed`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := Warnings(tc.agent, catalog{}, func(k string) string { return env[k] })
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("warnings = %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("warnings = %q, want one saying %q", got, tc.want)
			}
		})
	}
}
