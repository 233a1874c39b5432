package llm

import "testing"

func TestKeyEnv(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		model, provider, keyEnv string
		want                    string
	}{
		"anthropic":             {model: "anthropic/claude-sonnet-4-5", want: "ANTHROPIC_API_KEY"},
		"openai":                {model: "openai/gpt-4o", want: "OPENAI_API_KEY"},
		"bare claude":           {model: "claude-sonnet-4-5", want: "ANTHROPIC_API_KEY"},
		"bare o-series":         {model: "o3-mini", want: "OPENAI_API_KEY"},
		"known service":         {model: "google/gemini-2.5-pro", want: "GEMINI_API_KEY"},
		"ollama needs no key":   {model: "ollama/llama3.2", want: ""},
		"unknown service":       {model: "acme/m1", want: ""},
		"provider's own key":    {model: "m", provider: "local", keyEnv: "LOCAL_KEY", want: "LOCAL_KEY"},
		"provider named known":  {model: "deepseek-chat", provider: "deepseek", want: "DEEPSEEK_API_KEY"},
		"provider without key":  {model: "m", provider: "local", want: ""},
		"provider beats prefix": {model: "anthropic/claude-x", provider: "openrouter", want: "OPENROUTER_API_KEY"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := KeyEnv(tc.model, tc.provider, tc.keyEnv); got != tc.want {
				t.Errorf("KeyEnv(%q, %q, %q) = %q, want %q", tc.model, tc.provider, tc.keyEnv, got, tc.want)
			}
		})
	}
}
