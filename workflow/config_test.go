package workflow

import (
	"encoding/json"
	"testing"
	"time"
)

func TestConfigJSON(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		agent Agent
		want  string
	}{
		"nothing set": {Agent{Name: "a"}, `{}`},
		"mock script at the top": {
			Agent{Config: json.RawMessage(`{"script":[{"reply":"hi {{name}}"}]}`)},
			`{"script":[{"reply":"hi {{name}}"}]}`,
		},
		"every field": {
			Agent{
				Config:     json.RawMessage(`{"temperature":0.2}`),
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
			if got := string(tc.agent.ConfigJSON()); got != tc.want {
				t.Errorf("ConfigJSON =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
