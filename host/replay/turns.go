package replay

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// Turn is one model answer of a recorded sdk run: its text, the tool
// calls it made and the tokens it took.
type Turn struct {
	Text  string
	Tools []ToolCall
	// InputTokens and OutputTokens are this turn's own (the transcript's
	// usage events are running totals).
	InputTokens, OutputTokens int64
}

// ToolCall is a tool call of a Turn, with the id the model gave it.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
}

// memoryLog starts the log line the sdk backend writes after summarising
// its memory: the usage event before it is that summary's model call, not
// one of the run's turns.
const memoryLog = "sdk: memory: "

// Turns rebuilds the model's answers from an sdk run's transcript. The
// sdk backend streams each answer's text, then a usage event (the running
// total) when the answer is complete, then each tool call the answer made
// with its result; so an answer is the text before a usage event and the
// tool calls after it. Text after the last usage event is the backend's
// own (the max_steps notice), not the model's. An event too large to keep
// makes the transcript unusable, which the error says.
func Turns(events []store.RunEvent) ([]Turn, error) {
	var turns []Turn
	var text strings.Builder
	var prev backend.Usage
	streamed := false
	for i, e := range events {
		switch backend.EventKind(e.Kind) {
		case backend.EventText:
			var d struct {
				Text      string `json:"text"`
				Truncated int    `json:"truncated"`
			}
			if err := json.Unmarshal([]byte(e.Data), &d); err != nil || d.Truncated > 0 {
				return nil, fmt.Errorf("text event %d was not kept whole", e.N)
			}
			text.WriteString(d.Text)
		case backend.EventUsage:
			var u backend.Usage
			if err := json.Unmarshal([]byte(e.Data), &u); err != nil {
				return nil, fmt.Errorf("usage event %d: %w", e.N, err)
			}
			in, out := u.InputTokens-prev.InputTokens, u.OutputTokens-prev.OutputTokens
			prev = u
			if summary(events[i+1:]) {
				continue
			}
			t := text.String()
			if streamed {
				// The backend parts turns' text with a blank line.
				t = strings.TrimPrefix(t, "\n\n")
			}
			streamed = streamed || t != ""
			turns = append(turns, Turn{Text: t, InputTokens: in, OutputTokens: out})
			text.Reset()
		case backend.EventToolCall:
			var c backend.ToolCall
			if err := json.Unmarshal([]byte(e.Data), &c); err != nil || c.Name == "" {
				return nil, fmt.Errorf("tool call event %d was not kept whole", e.N)
			}
			if len(turns) == 0 {
				return nil, fmt.Errorf("tool call event %d comes before any model answer", e.N)
			}
			last := &turns[len(turns)-1]
			last.Tools = append(last.Tools, ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
		}
	}
	if len(turns) == 0 {
		return nil, fmt.Errorf("the transcript has no model answer")
	}
	return turns, nil
}

// summary tells whether the events after a usage event show it was the
// memory summary's call: its log line comes next, before any other
// event that says something.
func summary(rest []store.RunEvent) bool {
	for _, e := range rest {
		switch backend.EventKind(e.Kind) {
		case backend.EventHeartbeat:
			continue
		case backend.EventLog:
			var d struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal([]byte(e.Data), &d)
			return strings.HasPrefix(d.Text, memoryLog)
		}
		return false
	}
	return false
}
