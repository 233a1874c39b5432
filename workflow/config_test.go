package workflow

import (
	"encoding/json"
	"testing"
	"time"
)

func TestBackendConfig(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		agent Agent
		want  string
	}{
		"nothing set": {Agent{Name: "a"}, `{}`},
		"mock script at the top": {
			Agent{Config: map[string]json.RawMessage{"script": json.RawMessage(`[{"reply":"hi {{name}}"}]`)}},
			`{"script":[{"reply":"hi {{name}}"}]}`,
		},
		"every field": {
			Agent{
				Config:     map[string]json.RawMessage{"temperature": json.RawMessage(`0.2`)},
				MaxSteps:   50,
				Timeout:    10 * time.Minute,
				MCPServers: []MCPServer{{Name: "gh", Command: []string{"npx", "gh"}, Env: map[string]string{"T": "x"}}, {Name: "web", URL: "https://w", Headers: map[string]string{"A": "b"}}},
				Env:        map[string]string{"K": "v"},
				Provider:   &Provider{Name: "deepseek", BaseURL: "https://d", APIKeyEnv: "DK"},
			},
			`{"env":{"K":"v"},"max_steps":50,"mcp_servers":{"gh":{"command":["npx","gh"],"env":{"T":"x"}},"web":{"url":"https://w","headers":{"A":"b"}}},"provider":{"name":"deepseek","base_url":"https://d","api_key_env":"DK"},"temperature":0.2,"timeout":"10m0s"}`,
		},
		"provider name only": {Agent{Provider: &Provider{Name: "openrouter"}}, `{"provider":{"name":"openrouter"}}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tc.agent.BackendConfig())
			if got := string(b); err != nil || got != tc.want {
				t.Errorf("BackendConfig as JSON =\n%s (%v)\nwant\n%s", got, err, tc.want)
			}
		})
	}
}
