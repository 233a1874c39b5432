package direct

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/llm"
)

// The wire protocols the backend speaks, and the services it knows by
// name: one table in sdk/llm, which the daemon reads too.
const (
	apiAnthropic = llm.APIAnthropic
	apiOpenAI    = llm.APIOpenAI
)

var services, guessProvider = llm.Services, llm.GuessProvider

// model is where a run's requests go: resolved, key included, before any
// of them is made.
type model struct {
	provider string // services key or the provider config's name
	api      string
	name     string // as the API knows it
	baseURL  string
	key      string
}

// resolve turns an agent's model string and provider config into a model,
// or a message that says what to fix.
func resolve(s string, p *providerConfig, env func(string) string) (model, error) {
	if s == "" {
		return model{}, errors.New("no model: set the agent's model, e.g. anthropic/claude-sonnet-4-5 or openai/gpt-4o")
	}
	var m model
	var svc llm.Service
	var baseURL string
	if p != nil {
		if p.Name == "" {
			return model{}, errors.New("provider: name is required")
		}
		svc = services[p.Name]
		if p.Name != apiAnthropic {
			svc.API = apiOpenAI // any other provider speaks the OpenAI API
		}
		svc.KeyEnv = cmp.Or(p.APIKeyEnv, svc.KeyEnv)
		baseURL = p.BaseURL
		m.provider, m.name = p.Name, strings.TrimPrefix(s, p.Name+"/")
	} else {
		prefix, name, ok := strings.Cut(s, "/")
		if !ok {
			prefix, name = guessProvider(s), s
		}
		if svc, ok = services[prefix]; !ok || name == "" {
			return model{}, fmt.Errorf("model %q: write anthropic/<model>, openai/<model> or <service>/<model> (deepseek, google, groq, mistral, ollama, openrouter, xai), "+
				"or give the agent a provider: {name, base_url, api_key_env} for another OpenAI-compatible endpoint", s)
		}
		m.provider, m.name = prefix, name
	}
	m.api = svc.API
	envName := strings.ToUpper(strings.ReplaceAll(m.provider, "-", "_")) + "_BASE_URL"
	m.baseURL = cmp.Or(baseURL, env(envName), svc.BaseURL)
	if m.baseURL == "" {
		return model{}, fmt.Errorf("provider %s: set its base_url (e.g. http://localhost:8000/v1)", m.provider)
	}
	if svc.KeyEnv != "" {
		if m.key = env(svc.KeyEnv); m.key == "" {
			return model{}, fmt.Errorf("%s is not set: set it to an API key for %s/%s (in the daemon's environment or the agent's env)", svc.KeyEnv, m.provider, m.name)
		}
	}
	return m, nil
}

// chat is one conversation with a model, in its API's own message types.
type chat interface {
	// send streams the model's next turn for the conversation so far,
	// passing text deltas to text, and adds the turn to the conversation.
	send(ctx context.Context, text func(string) error) (turn, error)
	// answer adds the results of the last turn's tool calls.
	answer([]result)
}

// turn is what the model said in one step.
type turn struct {
	text    string
	calls   []call
	in, out int64 // tokens
	// model is the model as the API named it in its answer ("" when it
	// did not); finish is why it stopped, in the API's words.
	model, finish string
}

// call is a tool call the model made.
type call struct {
	id, name string
	args     json.RawMessage
}

// result is the outcome of a call, for the model.
type result struct {
	id, text string
	isError  bool
}

// toolSpec is a tool as offered to the model.
type toolSpec struct {
	name, description string
	schema            map[string]any // a JSON Schema object
}

// chat starts a conversation that continues history (earlier runs, oldest
// first) with prompt.
func (m model) chat(system string, history []exchange, prompt string, tools []toolSpec, maxTokens int64) chat {
	if m.api == apiAnthropic {
		return newAnthropicChat(m, system, history, prompt, tools, maxTokens)
	}
	return newOpenAIChat(m, system, history, prompt, tools, maxTokens)
}

// wrap names the model in err and marks API errors that a retry cannot
// fix (a bad key, an unknown model, a request the API rejects) permanent.
func (m model) wrap(err error) error {
	status := 0
	var ae *anthropic.Error
	var oe *openai.Error
	switch {
	case errors.As(err, &ae):
		status = ae.StatusCode
	case errors.As(err, &oe):
		status = oe.StatusCode
	}
	err = fmt.Errorf("sdk: %s/%s: %w", m.provider, m.name, err)
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return backend.Permanent(fmt.Errorf("%w (check the API key)", err))
	case http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return backend.Permanent(err)
	}
	return err
}

// price is what a model costs, in USD per million tokens.
type price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// prices are the built-in list prices by model name prefix (the longest
// matching prefix wins), for runs that report a cost without config.
var prices = map[string]price{
	"claude-opus-4-5":   {5, 25},
	"claude-opus-4":     {15, 75},
	"claude-sonnet-4":   {3, 15},
	"claude-3-7-sonnet": {3, 15},
	"claude-3-5-sonnet": {3, 15},
	"claude-haiku-4-5":  {1, 5},
	"claude-3-5-haiku":  {0.8, 4},
	"claude-3-haiku":    {0.25, 1.25},
	"gpt-5":             {1.25, 10},
	"gpt-5-mini":        {0.25, 2},
	"gpt-5-nano":        {0.05, 0.4},
	"gpt-4.1":           {2, 8},
	"gpt-4.1-mini":      {0.4, 1.6},
	"gpt-4.1-nano":      {0.1, 0.4},
	"gpt-4o":            {2.5, 10},
	"gpt-4o-mini":       {0.15, 0.6},
	"o3":                {2, 8},
	"o3-mini":           {1.1, 4.4},
	"o4-mini":           {1.1, 4.4},
}

// cost prices u with the agent's prices (by its model string or the bare
// name), else the built-in table; an unknown model costs 0.
func cost(m model, u backend.Usage, custom map[string]price) float64 {
	p, ok := custom[m.provider+"/"+m.name]
	if !ok {
		p, ok = custom[m.name]
	}
	if !ok {
		best := ""
		for prefix := range prices {
			if strings.HasPrefix(m.name, prefix) && len(prefix) > len(best) {
				best = prefix
			}
		}
		p, ok = prices[best]
	}
	if !ok {
		return 0
	}
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output) / 1e6
}
