package direct

import (
	"context"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openaiChat is a conversation over the Chat Completions API, which OpenAI
// and the compatible services (Ollama, vLLM, DeepSeek, OpenRouter…) speak.
type openaiChat struct {
	completions openai.ChatCompletionService
	params      openai.ChatCompletionNewParams
}

var _ chat = (*openaiChat)(nil)

func newOpenAIChat(m model, system string, history []exchange, prompt string, tools []toolSpec, maxTokens int64) *openaiChat {
	// The service alone, not openai.NewClient: that would add OPENAI_*
	// settings from the process (a key, an organisation, headers), which
	// must not reach another provider's endpoint.
	opts := []option.RequestOption{option.WithHTTPClient(&http.Client{}), option.WithBaseURL(m.baseURL),
		option.WithMaxRetries(maxRetries)}
	if m.key != "" {
		opts = append(opts, option.WithAPIKey(m.key))
	}
	c := &openaiChat{
		completions: openai.NewChatCompletionService(opts...),
		params: openai.ChatCompletionNewParams{
			Model:         shared.ChatModel(m.name),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		},
	}
	switch {
	case maxTokens == 0:
	case m.provider == "openai":
		c.params.MaxCompletionTokens = openai.Int(maxTokens)
	default:
		c.params.MaxTokens = openai.Int(maxTokens) // what the compatible services know
	}
	if system != "" {
		c.params.Messages = append(c.params.Messages, openai.SystemMessage(system))
	}
	for _, e := range history {
		c.params.Messages = append(c.params.Messages, openai.UserMessage(e.Prompt), openai.AssistantMessage(e.Reply))
	}
	c.params.Messages = append(c.params.Messages, openai.UserMessage(prompt))
	for _, t := range tools {
		fn := shared.FunctionDefinitionParam{Name: t.name, Parameters: shared.FunctionParameters(t.schema)}
		if t.description != "" {
			fn.Description = openai.String(t.description)
		}
		c.params.Tools = append(c.params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	return c
}

func (c *openaiChat) send(ctx context.Context, text func(string) error) (turn, error) {
	stream := c.completions.NewStreaming(ctx, c.params)
	defer stream.Close()
	var t turn
	var args []string // of t.calls, as they stream in
	for stream.Next() {
		chunk := stream.Current()
		if u := chunk.Usage; u.PromptTokens > 0 || u.CompletionTokens > 0 {
			t.in, t.out = u.PromptTokens, u.CompletionTokens // totals, usually in the last chunk
		}
		if chunk.Model != "" {
			t.model = chunk.Model
		}
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue
			}
			if choice.FinishReason != "" {
				t.finish = choice.FinishReason
			}
			if d := choice.Delta.Content; d != "" {
				t.text += d
				if err := text(d); err != nil {
					return turn{}, err
				}
			}
			for _, tc := range choice.Delta.ToolCalls {
				i := int(tc.Index)
				if i < 0 || i > len(t.calls) {
					i = len(t.calls)
				}
				if i == len(t.calls) {
					t.calls = append(t.calls, call{id: fmt.Sprintf("call_%d", i+1)})
					args = append(args, "")
				}
				if tc.ID != "" {
					t.calls[i].id = tc.ID
				}
				t.calls[i].name += tc.Function.Name
				args[i] += tc.Function.Arguments
			}
		}
	}
	if err := stream.Err(); err != nil {
		return turn{}, err
	}

	msg := openai.ChatCompletionAssistantMessageParam{}
	if t.text != "" {
		msg.Content.OfString = openai.String(t.text)
	}
	for i := range t.calls {
		if args[i] == "" {
			args[i] = "{}"
		}
		t.calls[i].args = []byte(args[i])
		msg.ToolCalls = append(msg.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: t.calls[i].id,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: t.calls[i].name, Arguments: args[i]}},
		})
	}
	c.params.Messages = append(c.params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &msg})
	return t, nil
}

func (c *openaiChat) answer(results []result) {
	for _, r := range results {
		text := r.text
		if r.isError {
			text = "Error: " + text // the API has no error flag for tool results
		}
		c.params.Messages = append(c.params.Messages, openai.ToolMessage(text, r.id))
	}
}
