package acp

import (
	"encoding/json"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// The usage a turn's session/prompt answer carries, as agents send it.
func TestPromptUsage(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		result string
		want   *backend.Usage
	}{
		"none": {`{"stopReason":"end_turn"}`, nil},
		"usage field": {`{"stopReason":"end_turn","usage":{"inputTokens":5,"outputTokens":3,"totalTokens":8}}`,
			&backend.Usage{InputTokens: 5, OutputTokens: 3}},
		// What gemini-cli 0.61.0 answers (captured): no usage field.
		"gemini's quota meta": {`{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":11,"output_tokens":7},` +
			`"model_usage":[{"model":"gemini-2.5-flash","token_count":{"input_tokens":11,"output_tokens":7}}]}}}`,
			&backend.Usage{InputTokens: 11, OutputTokens: 7}},
		"the usage field wins": {`{"stopReason":"end_turn","usage":{"inputTokens":5,"outputTokens":3,"totalTokens":8},` +
			`"_meta":{"quota":{"token_count":{"input_tokens":11,"output_tokens":7}}}}`,
			&backend.Usage{InputTokens: 5, OutputTokens: 3}},
		"other meta":         {`{"stopReason":"end_turn","_meta":{"quota":"unlimited"}}`, nil},
		"malformed count":    {`{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":"many"}}}}`, nil},
		"only output tokens": {`{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"output_tokens":2}}}}`, &backend.Usage{OutputTokens: 2}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var resp acpsdk.PromptResponse
			if err := json.Unmarshal([]byte(tc.result), &resp); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, promptUsage(resp)); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}
