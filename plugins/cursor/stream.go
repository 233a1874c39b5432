package cursor

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// maxToolResult bounds a tool result in the transcript: a file read can be
// megabytes, and the run's transcript only needs to show what happened.
const maxToolResult = 4000

// line is one stream-json event; only the fields this backend reads.
type line struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	Message   *message        `json:"message"`
	CallID    string          `json:"call_id"`
	ToolCall  json.RawMessage `json:"tool_call"`
	Result    *string         `json:"result"`
	IsError   bool            `json:"is_error"`
	Usage     json.RawMessage `json:"usage"`
}

type message struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// stream turns cursor-agent's stream-json lines into run events and
// remembers how the run ended. It is not safe for concurrent use.
type stream struct {
	session  string
	texts    int
	lastText string
	result   *line
	noise    []string // the last non-JSON stdout lines, for error messages
}

// parse returns the events one stdout line stands for. A line that is not
// JSON is kept as a log line: it is what the CLI says when it refuses to
// run (a trust prompt, a login hint).
func (s *stream) parse(raw []byte) []backend.Event {
	raw = bytes.TrimSpace(raw)
	var l line
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &l) != nil || l.Type == "" {
		text := string(raw)
		s.noise = append(s.noise, text)
		if len(s.noise) > 5 {
			s.noise = s.noise[1:]
		}
		return []backend.Event{{Kind: backend.EventLog, Text: text}}
	}
	var out []backend.Event
	if l.SessionID != "" && s.session == "" {
		s.session = l.SessionID
		out = append(out, backend.Event{Kind: backend.EventSession, SessionID: l.SessionID})
	}
	switch l.Type {
	case "assistant":
		var b strings.Builder
		if l.Message != nil {
			for _, c := range l.Message.Content {
				if c.Type == "text" || c.Type == "" {
					b.WriteString(c.Text)
				}
			}
		}
		if text := b.String(); strings.TrimSpace(text) != "" {
			s.lastText = text
			if s.texts > 0 { // whole messages, not deltas: keep them apart
				text = "\n\n" + text
			}
			s.texts++
			out = append(out, backend.Event{Kind: backend.EventText, Text: text})
		}
	case "tool_call":
		if call, ok := toolCall(l.CallID, l.ToolCall); ok {
			kind := backend.EventToolCall
			if l.Subtype == "completed" {
				kind = backend.EventToolResult
			}
			out = append(out, backend.Event{Kind: kind, Tool: &call})
		}
	case "result":
		s.result = &l
		if u := usage(l.Usage); u != nil {
			out = append(out, backend.Event{Kind: backend.EventUsage, Usage: u})
		}
		if text := s.resultText(); !s.failed() && text != "" {
			out = append(out, backend.Event{Kind: backend.EventResult, Text: text})
		}
	}
	// system/init carries only the session; user echoes the prompt;
	// thinking is the model's scratchpad. None is worth a transcript line.
	return out
}

func (s *stream) failed() bool {
	return s.result != nil && (s.result.IsError || s.result.Subtype != "success")
}

func (s *stream) resultText() string {
	if s.result != nil && s.result.Result != nil && *s.result.Result != "" {
		return *s.result.Result
	}
	return s.lastText
}

// started reports whether the CLI got as far as printing an event.
func (s *stream) started() bool { return s.session != "" || s.texts > 0 || s.result != nil }

// err says how the run ended once the CLI has exited with status 0: only a
// successful result event makes it a success. The CLI also exits 0 when
// it refuses to run (an untrusted workspace), so a missing result is an
// error.
func (s *stream) err() error {
	switch {
	case s.result == nil && len(s.noise) > 0:
		return fmt.Errorf("cursor-agent ended without a result: %s", strings.Join(s.noise, " | "))
	case s.result == nil:
		return errors.New("cursor-agent ended without a result")
	case s.failed():
		what := "cursor-agent failed"
		if st := s.result.Subtype; st != "" && st != "error" && st != "success" {
			what += " (" + st + ")"
		}
		return fmt.Errorf("%s: %s", what, cmp.Or(s.resultText(), "no details"))
	}
	return nil
}

// toolCall reads a tool_call object, which holds one key naming the tool's
// kind: readToolCall, writeToolCall, shellToolCall, … (args, result),
// function (name, arguments) or mcpToolCall (args.toolName, args.args).
func toolCall(id string, raw json.RawMessage) (backend.ToolCall, bool) {
	var kinds map[string]struct {
		Args      json.RawMessage `json:"args"`
		Result    json.RawMessage `json:"result"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(raw, &kinds) != nil || len(kinds) != 1 {
		return backend.ToolCall{}, false
	}
	for kind, v := range kinds {
		call := backend.ToolCall{ID: id, Name: strings.TrimSuffix(kind, "ToolCall"), Args: v.Args}
		switch kind {
		case "function":
			call.Name, call.Args = v.Name, v.Arguments
			var s string // arguments may be a JSON string holding JSON
			if json.Unmarshal(v.Arguments, &s) == nil && json.Valid([]byte(s)) {
				call.Args = json.RawMessage(s)
			}
		case "mcpToolCall":
			var a struct {
				Name     string          `json:"name"`
				ToolName string          `json:"toolName"`
				Provider string          `json:"providerIdentifier"`
				Args     json.RawMessage `json:"args"`
			}
			_ = json.Unmarshal(v.Args, &a)
			call.Name, call.Args = cmp.Or(a.ToolName, a.Name), a.Args
			if a.Provider != "" && a.Provider != daemonServer && a.ToolName != "" {
				call.Name = a.Provider + "." + a.ToolName
			}
		}
		if call.Name == "" {
			call.Name = kind
		}
		if len(v.Result) > 0 {
			call.Result, call.IsError = toolResult(v.Result)
		}
		return call, true
	}
	return backend.ToolCall{}, false
}

// toolResult reads a tool's outcome: {"success": …} or {"error"|"failure"|
// "rejected": …}; an MCP result's text content is shown as text.
func toolResult(raw json.RawMessage) (string, bool) {
	var outcome map[string]json.RawMessage
	if json.Unmarshal(raw, &outcome) != nil {
		return clip(string(raw)), false
	}
	isError := false
	body, ok := outcome["success"]
	if !ok {
		for _, k := range []string{"error", "failure", "rejected"} {
			if body, ok = outcome[k]; ok {
				isError = true
				break
			}
		}
	}
	if !ok {
		return clip(string(raw)), false
	}
	var mcp struct {
		Content []struct {
			Text json.RawMessage `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if json.Unmarshal(body, &mcp) == nil && len(mcp.Content) > 0 {
		var parts []string
		for _, c := range mcp.Content {
			var text string
			var nested struct {
				Text string `json:"text"`
			}
			switch {
			case json.Unmarshal(c.Text, &text) == nil:
			case json.Unmarshal(c.Text, &nested) == nil:
				text = nested.Text
			}
			parts = append(parts, text)
		}
		return clip(strings.Join(parts, "\n")), isError || mcp.IsError
	}
	var s string
	if json.Unmarshal(body, &s) == nil {
		return clip(s), isError
	}
	return clip(string(body)), isError
}

func clip(s string) string {
	if r := []rune(s); len(r) > maxToolResult {
		return string(r[:maxToolResult]) + "…"
	}
	return s
}

// usage reads token counts if the result carries them (the documented
// format does not; some versions add them, in either spelling).
func usage(raw json.RawMessage) *backend.Usage {
	var u struct {
		Input       int64   `json:"input_tokens"`
		Output      int64   `json:"output_tokens"`
		InputCamel  int64   `json:"inputTokens"`
		OutputCamel int64   `json:"outputTokens"`
		Cost        float64 `json:"total_cost_usd"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &u) != nil {
		return nil
	}
	out := &backend.Usage{InputTokens: max(u.Input, u.InputCamel), OutputTokens: max(u.Output, u.OutputCamel), CostUSD: u.Cost}
	if *out == (backend.Usage{}) {
		return nil
	}
	return out
}
