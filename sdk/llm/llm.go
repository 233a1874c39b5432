// Package llm is the table of model services the direct-API backend knows
// (plugins/direct): which wire protocol each speaks, its default base URL and
// the environment variable that holds its API key. It lives in the SDK so
// that the daemon can tell a user, as soon as an agent is created, which
// variable its runs will need — from the same table the backend resolves
// models with, so the two can never disagree.
package llm

import (
	"cmp"
	"strings"
)

// The wire protocols a service speaks.
const (
	APIAnthropic = "anthropic" // Anthropic Messages
	APIOpenAI    = "openai"    // Chat Completions, also spoken by the compatible services
)

// Service is a model API known by the prefix of a model string
// (anthropic/claude-…); its base URL can be overridden with
// <NAME>_BASE_URL.
type Service struct {
	API     string
	BaseURL string
	KeyEnv  string // "" sends no key
}

// Services are the services a model string may name without a provider
// config.
var Services = map[string]Service{
	"anthropic":  {APIAnthropic, "https://api.anthropic.com", "ANTHROPIC_API_KEY"},
	"openai":     {APIOpenAI, "https://api.openai.com/v1", "OPENAI_API_KEY"},
	"deepseek":   {APIOpenAI, "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"},
	"google":     {APIOpenAI, "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY"},
	"groq":       {APIOpenAI, "https://api.groq.com/openai/v1", "GROQ_API_KEY"},
	"mistral":    {APIOpenAI, "https://api.mistral.ai/v1", "MISTRAL_API_KEY"},
	"ollama":     {APIOpenAI, "http://localhost:11434/v1", ""},
	"openrouter": {APIOpenAI, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"},
	"xai":        {APIOpenAI, "https://api.x.ai/v1", "XAI_API_KEY"},
}

// GuessProvider names the service of a model written without one
// (claude-… is Anthropic, gpt-…/o3… OpenAI), or "".
func GuessProvider(name string) string {
	switch {
	case strings.HasPrefix(name, "claude"):
		return "anthropic"
	case strings.HasPrefix(name, "gpt-"), strings.HasPrefix(name, "chatgpt"),
		len(name) > 1 && name[0] == 'o' && name[1] >= '1' && name[1] <= '9':
		return "openai"
	}
	return ""
}

// KeyEnv is the variable a run of model needs set to an API key, given the
// agent's provider config (providerName and providerKeyEnv, both "" when
// it has none). It is "" when no key is needed or the model names no
// known service (the run then says what is wrong with the model).
func KeyEnv(model, providerName, providerKeyEnv string) string {
	if providerName != "" {
		return cmp.Or(providerKeyEnv, Services[providerName].KeyEnv)
	}
	prefix, _, ok := strings.Cut(model, "/")
	if !ok {
		prefix = GuessProvider(model)
	}
	return Services[prefix].KeyEnv
}
