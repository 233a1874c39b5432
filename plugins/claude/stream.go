package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// line is one stream-json line of `claude -p --output-format stream-json
// --verbose`, with the fields this backend reads.
type line struct {
	Type    string `json:"type"` // system, assistant, user, result
	Subtype string `json:"subtype"`
	// A hook_response line (--include-hook-events): the hook's event
	// and what it printed.
	HookEvent string   `json:"hook_event"`
	Stdout    string   `json:"stdout"`
	SessionID string   `json:"session_id"`
	Message   *message `json:"message"`
	// ParentToolUseID is set on a sub-agent's messages (the Task tool).
	ParentToolUseID *string `json:"parent_tool_use_id"`
	// Error marks a synthetic assistant message that reports a failure
	// ("authentication_failed").
	Error json.RawMessage `json:"error"`

	// The result line.
	IsError        bool     `json:"is_error"`
	Result         string   `json:"result"`
	Errors         []string `json:"errors"`
	APIErrorStatus int      `json:"api_error_status"`
	TotalCostUSD   float64  `json:"total_cost_usd"`
	Usage          *struct {
		InputTokens              int64 `json:"input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
	} `json:"usage"`
}

type message struct {
	// Content is a list of blocks, or a plain string for a user's text.
	Content json.RawMessage `json:"content"`
}

type block struct {
	Type string `json:"type"` // text, tool_use, tool_result, thinking
	Text string `json:"text"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// stream turns a run's stdout lines into events and remembers how the run
// ended. It is used by one goroutine (the CLI's stdout reader).
type stream struct {
	events backend.Events
	// init is set once the CLI started a conversation (its init line).
	init bool
	// result is the final line; nil if the CLI never printed one.
	result *line
	// tools names the calls by id, for their results.
	tools map[string]string
	// failure is what a synthetic error message said ("authentication_failed").
	failure string
	// texts counts the text blocks sent: each is a whole block, not a
	// delta, so the next is set apart by a blank line (as cursor's are)
	// rather than run into the last word of the one before.
	texts int
}

func newStream(events backend.Events) *stream {
	return &stream{events: events, tools: map[string]string{}}
}

// line handles one stdout line. Every line sends at least one event, a
// heartbeat if nothing else, because every line proves the run alive; an
// error is a failed Send, which stops the CLI.
func (s *stream) line(raw []byte) error {
	var l line
	if err := json.Unmarshal(raw, &l); err != nil {
		// Not stream-json (a warning on stdout): keep it for the transcript.
		return s.send(backend.Event{Kind: backend.EventLog, Text: string(raw)})
	}
	var evs []backend.Event
	switch l.Type {
	case "system":
		switch {
		case l.Subtype == "init":
			s.init = true
			if l.SessionID != "" {
				evs = append(evs, backend.Event{Kind: backend.EventSession, SessionID: l.SessionID})
			}
		case l.Subtype == "hook_response" && l.HookEvent == "PreToolUse":
			// The daemon's gate refused the call about to run: the
			// model reads the reason as the tool's result next.
			if reason, ok := gateRefusal(l.Stdout); ok {
				evs = append(evs, backend.Event{Kind: backend.EventGate, Text: reason})
			}
		}
	case "assistant":
		evs = s.assistant(l)
	case "user":
		evs = s.toolResults(l)
	case "result":
		s.result = &l
		evs = resultEvents(l)
	}
	if len(evs) == 0 {
		evs = []backend.Event{{Kind: backend.EventHeartbeat}}
	}
	for _, e := range evs {
		if err := s.send(e); err != nil {
			return err
		}
	}
	return nil
}

func (s *stream) send(e backend.Event) error { return s.events.Send(e) }

// assistant maps a model message: text and tool calls. A sub-agent's text
// is not the agent's reply and a synthetic error message is no model
// text, so both go to the transcript as logs.
func (s *stream) assistant(l line) []backend.Event {
	var evs []backend.Event
	failure := errorCode(l.Error)
	if failure != "" {
		s.failure = failure
	}
	for _, b := range blocks(l.Message) {
		switch b.Type {
		case "text":
			kind := backend.EventText
			if failure != "" || l.ParentToolUseID != nil {
				kind = backend.EventLog
			}
			if b.Text != "" {
				text := b.Text
				if kind == backend.EventText {
					if s.texts > 0 {
						text = "\n\n" + text
					}
					s.texts++
				}
				evs = append(evs, backend.Event{Kind: kind, Text: text})
			}
		case "tool_use":
			s.tools[b.ID] = b.Name
			evs = append(evs, backend.Event{Kind: backend.EventToolCall,
				Tool: &backend.ToolCall{ID: b.ID, Name: b.Name, Args: orEmptyObject(b.Input)}})
		}
	}
	return evs
}

// toolResults maps the tool results Claude Code feeds back to the model.
func (s *stream) toolResults(l line) []backend.Event {
	var evs []backend.Event
	for _, b := range blocks(l.Message) {
		if b.Type != "tool_result" {
			continue
		}
		name := s.tools[b.ToolUseID]
		if name == "" {
			name = "unknown"
		}
		evs = append(evs, backend.Event{Kind: backend.EventToolResult,
			Tool: &backend.ToolCall{ID: b.ToolUseID, Name: name, Result: resultText(b.Content), IsError: b.IsError}})
	}
	return evs
}

// resultEvents reports the final line: usage always, the answer when the
// run succeeded.
func resultEvents(l line) []backend.Event {
	var evs []backend.Event
	if u := l.Usage; u != nil || l.TotalCostUSD > 0 {
		usage := &backend.Usage{CostUSD: l.TotalCostUSD}
		if u != nil {
			// Cached input is input the model read too.
			usage.InputTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
			usage.OutputTokens = u.OutputTokens
		}
		evs = append(evs, backend.Event{Kind: backend.EventUsage, Usage: usage})
	}
	if !l.IsError && l.Subtype == "success" {
		evs = append(evs, backend.Event{Kind: backend.EventResult, Text: l.Result})
	}
	return evs
}

// err is how the run ended according to the stream: nil for a successful
// result line, else the CLI's own words. Authentication, billing and
// permission problems are permanent: retrying with the same key or
// config fails the same way.
func (s *stream) err() error {
	l := s.result
	if l == nil {
		return errNoResult
	}
	if !l.IsError && l.Subtype == "success" {
		return nil
	}
	msg := strings.Join(l.Errors, "; ")
	if msg == "" {
		msg = l.Result
	}
	if msg == "" {
		msg = l.Subtype
	}
	err := fmt.Errorf("claude: %s", msg)
	switch {
	case l.APIErrorStatus == 401, l.APIErrorStatus == 403,
		s.failure == "authentication_failed", s.failure == "billing_error",
		strings.Contains(msg, "Invalid API key"), strings.Contains(msg, "/login"):
		return backend.Permanent(err)
	}
	return err
}

// errNoResult is a stream that ended without a result line.
var errNoResult = errors.New("claude: the CLI ended without a result")

func blocks(m *message) []block {
	if m == nil {
		return nil
	}
	var bs []block
	if json.Unmarshal(m.Content, &bs) != nil {
		return nil // a plain string: the prompt echoed back
	}
	return bs
}

// resultText flattens a tool result's content: a string, or text blocks.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []block
	if json.Unmarshal(raw, &parts) != nil {
		return string(raw)
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// errorCode reads the error field of an assistant line: a string, or an
// object with a type.
func errorCode(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Type
	}
	return ""
}

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}
