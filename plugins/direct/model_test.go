package direct

import (
	"math"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o", "OPENROUTER_API_KEY": "r",
		"OPENAI_BASE_URL": "http://proxy/v1", "K": "k"}
	env := func(k string) string { return vars[k] }
	for name, tc := range map[string]struct {
		model    string
		provider *providerConfig
		want     model
		wantErr  string
	}{
		"anthropic": {model: "anthropic/claude-sonnet-4-5",
			want: model{"anthropic", apiAnthropic, "claude-sonnet-4-5", "https://api.anthropic.com", "a"}},
		"base URL from env": {model: "openai/gpt-4o", want: model{"openai", apiOpenAI, "gpt-4o", "http://proxy/v1", "o"}},
		"bare gpt":          {model: "gpt-5", want: model{"openai", apiOpenAI, "gpt-5", "http://proxy/v1", "o"}},
		"bare o-series":     {model: "o3-mini", want: model{"openai", apiOpenAI, "o3-mini", "http://proxy/v1", "o"}},
		"slash in the name": {model: "openrouter/anthropic/claude-sonnet-4",
			want: model{"openrouter", apiOpenAI, "anthropic/claude-sonnet-4", "https://openrouter.ai/api/v1", "r"}},
		"ollama needs no key": {model: "ollama/llama3.2:3b", want: model{"ollama", apiOpenAI, "llama3.2:3b", "http://localhost:11434/v1", ""}},
		"provider config beats env": {model: "openai/gpt-4o", provider: &providerConfig{Name: "openai", BaseURL: "http://mine/v1"},
			want: model{"openai", apiOpenAI, "gpt-4o", "http://mine/v1", "o"}},
		"provider named anthropic speaks its API": {model: "claude-x", provider: &providerConfig{Name: "anthropic", BaseURL: "http://gw", APIKeyEnv: "K"},
			want: model{"anthropic", apiAnthropic, "claude-x", "http://gw", "k"}},
		"provider keeps the model whole": {model: "anthropic/claude-x", provider: &providerConfig{Name: "gw", BaseURL: "http://gw/v1"},
			want: model{"gw", apiOpenAI, "anthropic/claude-x", "http://gw/v1", ""}},
		"unknown service":  {model: "acme/m", wantErr: "provider: {name, base_url, api_key_env}"},
		"unguessable name": {model: "llama3", wantErr: "model \"llama3\""},
		"missing key":      {model: "groq/llama-3.3-70b", wantErr: "GROQ_API_KEY is not set"},
		"provider name":    {model: "m", provider: &providerConfig{BaseURL: "http://x"}, wantErr: "name is required"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := resolve(tc.model, tc.provider, env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("resolve(%q) = %+v, %v; want an error with %q", tc.model, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("resolve(%q) = %+v, %v; want %+v", tc.model, got, err, tc.want)
			}
		})
	}
}

func TestCostUsesTheLongestPrefix(t *testing.T) {
	t.Parallel()
	million := backend.Usage{InputTokens: 1e6, OutputTokens: 1e6}
	for name, want := range map[string]float64{
		"gpt-4o-mini-2024-07-18":   0.75,
		"gpt-4o-2024-08-06":        12.5,
		"claude-opus-4-5-20251101": 30,
		"claude-opus-4-1-20250805": 90,
		"llama3":                   0,
	} {
		if got := cost(model{provider: "x", name: name}, million, nil); math.Abs(got-want) > 1e-9 {
			t.Errorf("cost of a million tokens each way on %s = %g, want %g", name, got, want)
		}
	}
	custom := map[string]price{"x/llama3": {1, 1}}
	if got := cost(model{provider: "x", name: "llama3"}, million, custom); got != 2 {
		t.Errorf("cost with a price for the full model string = %g, want 2", got)
	}
}
