package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// step is one thing a run did that a replay should do again: its text
// between tool calls, a tool call (name and arguments), a tool's outcome
// (ok or error) and its result. Tool results' text is not compared: a
// scratch team answers with its own ids and seqs.
type step struct {
	what, key, shown string
}

// steps reads a transcript as the steps Diverge compares.
func steps(events []store.RunEvent) []step {
	var out []step
	var text strings.Builder
	flush := func() {
		if t := strings.TrimSpace(text.String()); t != "" {
			out = append(out, step{"text", t, t})
		}
		text.Reset()
	}
	for _, e := range events {
		switch backend.EventKind(e.Kind) {
		case backend.EventText:
			var d struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal([]byte(e.Data), &d)
			text.WriteString(d.Text)
		case backend.EventToolCall, backend.EventToolResult:
			flush()
			var c backend.ToolCall
			_ = json.Unmarshal([]byte(e.Data), &c)
			if e.Kind == string(backend.EventToolCall) {
				a := canonical(c.Args)
				out = append(out, step{"tool call", c.Name + " " + a, c.Name + " " + a})
				break
			}
			outcome := "ok"
			if c.IsError {
				outcome = "error: " + clip(c.Result, 300)
			}
			key := "ok"
			if c.IsError {
				key = "error"
			}
			out = append(out, step{"tool result", c.Name + " " + key, c.Name + " " + outcome})
		case backend.EventResult:
			flush()
			var d struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal([]byte(e.Data), &d)
			t := strings.TrimSpace(d.Text)
			out = append(out, step{"result", t, t})
		}
	}
	flush()
	return out
}

// Diverge compares a replay's transcript with its recording's and returns
// the first step at which they differ, nil when they do not.
func Diverge(recorded, replayed []store.RunEvent) *contract.Divergence {
	a, b := steps(recorded), steps(replayed)
	for i := 0; i < len(a) || i < len(b); i++ {
		switch {
		case i >= len(a):
			return &contract.Divergence{Step: i + 1, What: b[i].what, Recorded: "(nothing: the recording ended)", Replayed: b[i].shown}
		case i >= len(b):
			return &contract.Divergence{Step: i + 1, What: a[i].what, Recorded: a[i].shown, Replayed: "(nothing: the replay ended)"}
		case a[i].what != b[i].what:
			return &contract.Divergence{Step: i + 1, What: a[i].what + " / " + b[i].what,
				Recorded: a[i].what + ": " + a[i].shown, Replayed: b[i].what + ": " + b[i].shown}
		case a[i].key != b[i].key:
			return &contract.Divergence{Step: i + 1, What: a[i].what, Recorded: a[i].shown, Replayed: b[i].shown}
		}
	}
	return nil
}

// canonical is a tool call's arguments with their keys sorted and no
// spacing, so that equal arguments compare equal.
func canonical(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// clip cuts s to n bytes on a rune boundary and says it did.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:n], len(s))
}
