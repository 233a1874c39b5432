package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

// entry is one transcript event as the run page shows it.
type entry struct {
	N     int
	At    time.Time
	Kind  string // prompt, text, tool_call, tool_result, usage, session, result, log
	Label string
	Text  string // prose
	Code  string // shown as is: tool arguments and results, unknown data
	Error bool
	// Prompt is set on the prompt event: the system prompt and the inbox
	// the run was shown.
	Prompt *api.PromptEvent
}

// transcriptEntry reads one stored event the way `agent-worker logs`
// does; an event it cannot read is shown as its raw data.
func transcriptEntry(e api.RunEvent) entry {
	en := entry{N: e.N, At: e.At, Kind: e.Kind, Label: e.Kind}
	switch e.Kind {
	case api.RunEventPrompt:
		var p api.PromptEvent
		if json.Unmarshal(e.Data, &p) == nil {
			en.Label, en.Prompt = "prompt", &p
			return en
		}
	case string(backend.EventToolCall), string(backend.EventToolResult):
		var tc backend.ToolCall
		if json.Unmarshal(e.Data, &tc) == nil {
			if e.Kind == string(backend.EventToolCall) {
				en.Label, en.Text, en.Code = "tool call", tc.Name, indentJSON(tc.Args)
			} else {
				en.Label, en.Text, en.Code, en.Error = "tool result", tc.Name, tc.Result, tc.IsError
				if tc.IsError {
					en.Label = "tool error"
				}
			}
			return en
		}
	case string(backend.EventUsage):
		var u backend.Usage
		if json.Unmarshal(e.Data, &u) == nil {
			en.Text = fmt.Sprintf("%d tokens in, %d out", u.InputTokens, u.OutputTokens)
			if u.CostUSD > 0 {
				en.Text += fmt.Sprintf(", $%.4f reported by the backend", u.CostUSD)
			}
			return en
		}
	default:
		var d struct {
			Text         string `json:"text"`
			SessionID    string `json:"session_id"`
			SessionBytes int    `json:"session_bytes"`
			Truncated    int    `json:"truncated"`
		}
		if json.Unmarshal(e.Data, &d) == nil {
			switch {
			case d.SessionID != "":
				en.Text = "session " + d.SessionID
			case d.SessionBytes > 0:
				en.Text = fmt.Sprintf("session (%d bytes)", d.SessionBytes)
			case d.Truncated > 0:
				en.Text = fmt.Sprintf("(an event of %d bytes, too large to keep)", d.Truncated)
			default:
				en.Text = d.Text
			}
			return en
		}
	}
	en.Code = indentJSON(e.Data)
	return en
}

// indentJSON is raw JSON laid out for reading, or as it came if it is not
// JSON.
func indentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}
