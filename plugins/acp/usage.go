package acp

import (
	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// promptUsage is a turn's token usage: the response's usage field, else
// the count Gemini CLI (0.61.0) puts in _meta.quota.token_count instead;
// nil when the agent reported neither.
func promptUsage(resp acpsdk.PromptResponse) *backend.Usage {
	if u := resp.Usage; u != nil {
		return &backend.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens)}
	}
	quota, _ := resp.Meta["quota"].(map[string]any)
	count, _ := quota["token_count"].(map[string]any)
	in, okIn := count["input_tokens"].(float64)
	out, okOut := count["output_tokens"].(float64)
	if !okIn && !okOut {
		return nil
	}
	return &backend.Usage{InputTokens: int64(in), OutputTokens: int64(out)}
}
