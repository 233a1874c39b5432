package direct

import (
	"cmp"
	"context"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// anthropicChat is a conversation over the Anthropic Messages API.
type anthropicChat struct {
	client anthropic.Client
	params anthropic.MessageNewParams
}

var _ chat = (*anthropicChat)(nil)

func newAnthropicChat(m model, system string, history []exchange, prompt string, tools []toolSpec, maxTokens int64) *anthropicChat {
	var msgs []anthropic.MessageParam
	for _, e := range history {
		msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(e.Prompt)),
			anthropic.NewAssistantMessage(anthropic.NewTextBlock(e.Reply)))
	}
	c := &anthropicChat{
		// Only what resolve found: no ANTHROPIC_* from the process, so the
		// agent's config and the Env option decide.
		client: anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithAPIKey(m.key),
			option.WithBaseURL(m.baseURL), option.WithMaxRetries(maxRetries)),
		params: anthropic.MessageNewParams{
			Model:     anthropic.Model(m.name),
			MaxTokens: cmp.Or(maxTokens, defaultMaxTokens),
			Messages:  append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))),
		},
	}
	if system != "" {
		c.params.System = []anthropic.TextBlockParam{{Text: system}}
	}
	for _, t := range tools {
		schema := anthropic.ToolInputSchemaParam{Properties: t.schema["properties"], ExtraFields: map[string]any{}}
		for k, v := range t.schema {
			switch k {
			case "type", "properties":
			case "required":
				names, _ := v.([]any)
				for _, r := range names {
					if s, ok := r.(string); ok {
						schema.Required = append(schema.Required, s)
					}
				}
			default:
				schema.ExtraFields[k] = v
			}
		}
		tp := anthropic.ToolParam{Name: t.name, InputSchema: schema}
		if t.description != "" {
			tp.Description = anthropic.String(t.description)
		}
		c.params.Tools = append(c.params.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return c
}

func (c *anthropicChat) send(ctx context.Context, text func(string) error) (turn, error) {
	stream := c.client.Messages.NewStreaming(ctx, c.params)
	defer stream.Close()
	var msg anthropic.Message
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return turn{}, err
		}
		if d, ok := ev.AsAny().(anthropic.ContentBlockDeltaEvent); ok {
			if td, ok := d.Delta.AsAny().(anthropic.TextDelta); ok && td.Text != "" {
				if err := text(td.Text); err != nil {
					return turn{}, err
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		return turn{}, err
	}
	c.params.Messages = append(c.params.Messages, msg.ToParam())
	u := msg.Usage
	t := turn{in: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, out: u.OutputTokens,
		model: string(msg.Model), finish: string(msg.StopReason)}
	for _, b := range msg.Content {
		switch b := b.AsAny().(type) {
		case anthropic.TextBlock:
			t.text += b.Text
		case anthropic.ToolUseBlock:
			t.calls = append(t.calls, call{id: b.ID, name: b.Name, args: b.Input})
		}
	}
	return t, nil
}

func (c *anthropicChat) answer(results []result) {
	blocks := make([]anthropic.ContentBlockParamUnion, len(results))
	for i, r := range results {
		blocks[i] = anthropic.NewToolResultBlock(r.id, r.text, r.isError)
	}
	c.params.Messages = append(c.params.Messages, anthropic.NewUserMessage(blocks...))
}
