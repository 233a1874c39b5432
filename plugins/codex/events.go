package codex

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// event is one line of `codex exec --json`.
type event struct {
	Type     string    `json:"type"`
	ThreadID string    `json:"thread_id"`
	Message  string    `json:"message"`
	Error    *errorMsg `json:"error"`
	Usage    *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
	Item *item `json:"item"`
}

type errorMsg struct {
	Message string `json:"message"`
}

// item is a thread item: an agent message, an MCP tool call, a shell
// command, a warning (type error) or something this backend only counts
// as a sign of life.
type item struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`
	Text    string    `json:"text"`
	Message string    `json:"message"`
	Status  string    `json:"status"`
	Error   *errorMsg `json:"error"`
	// mcp_tool_call
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Structured json.RawMessage `json:"structured_content"`
	} `json:"result"`
	// command_execution
	Command  string `json:"command"`
	Output   string `json:"aggregated_output"`
	ExitCode *int   `json:"exit_code"`
}

// parser turns codex's JSONL into run events and remembers what decides
// the run's outcome, since codex's exit code does not.
type parser struct {
	thread    string // from thread.started
	answer    string // the last agent message
	answered  bool
	completed bool   // a turn completed after the last error
	failure   string // an error or failed turn not followed by a completed turn
	toolErr   string // the last failed MCP call
	announced map[string]bool
	// texts counts the agent messages sent as text: whole messages, not
	// deltas, so the next is set apart by a blank line.
	texts int
}

func newParser() *parser { return &parser{announced: map[string]bool{}} }

// parse returns the events one stdout line stands for, if any.
func (p *parser) parse(line []byte) []backend.Event {
	var e event
	if err := json.Unmarshal(line, &e); err != nil || e.Type == "" {
		return []backend.Event{{Kind: backend.EventLog, Text: string(line)}}
	}
	switch e.Type {
	case "thread.started":
		if e.ThreadID != "" {
			p.thread = e.ThreadID
			return []backend.Event{{Kind: backend.EventSession, SessionID: e.ThreadID}}
		}
	case "turn.completed":
		p.completed, p.failure = true, ""
		if e.Usage != nil {
			return []backend.Event{{Kind: backend.EventUsage, Usage: &backend.Usage{InputTokens: e.Usage.InputTokens, OutputTokens: e.Usage.OutputTokens}}}
		}
	case "turn.failed":
		p.completed, p.failure = false, "turn failed"
		if e.Error != nil && e.Error.Message != "" {
			p.failure = e.Error.Message
		}
		return []backend.Event{{Kind: backend.EventLog, Text: "codex: turn failed: " + p.failure}}
	case "error":
		p.completed, p.failure = false, cmp.Or(e.Message, "error")
		return []backend.Event{{Kind: backend.EventLog, Text: "codex: error: " + p.failure}}
	case "item.started", "item.updated", "item.completed":
		if e.Item != nil {
			return p.item(e.Item, e.Type == "item.completed")
		}
	}
	return nil
}

func (p *parser) item(it *item, done bool) []backend.Event {
	switch it.Type {
	case "agent_message":
		if done {
			p.answer, p.answered = it.Text, true
			text := it.Text
			if p.texts > 0 {
				text = "\n\n" + text
			}
			p.texts++
			return []backend.Event{{Kind: backend.EventText, Text: text}}
		}
	case "error": // a warning: the turn goes on
		if done {
			return []backend.Event{{Kind: backend.EventLog, Text: "codex: " + it.Message}}
		}
	case "mcp_tool_call":
		name := it.Tool
		if it.Server != daemonServer {
			name = it.Server + "/" + it.Tool
		}
		return p.tool(it, done, backend.ToolCall{ID: it.ID, Name: name, Args: it.Arguments}, func(c *backend.ToolCall) {
			switch {
			case it.Error != nil || it.Status == "failed":
				c.IsError = true
				c.Result = "failed"
				if it.Error != nil {
					c.Result = it.Error.Message
				}
				p.toolErr = name + ": " + c.Result
			case it.Result != nil:
				var texts []string
				for _, part := range it.Result.Content {
					if part.Type == "text" {
						texts = append(texts, part.Text)
					}
				}
				c.Result = strings.Join(texts, "\n")
				if c.Result == "" {
					c.Result = string(it.Result.Structured)
				}
			}
		})
	case "command_execution":
		args, _ := json.Marshal(map[string]string{"command": it.Command})
		return p.tool(it, done, backend.ToolCall{ID: it.ID, Name: "shell", Args: args}, func(c *backend.ToolCall) {
			c.Result = it.Output
			c.IsError = it.Status == "failed" || it.ExitCode != nil && *it.ExitCode != 0
			c.Exit = it.ExitCode // the daemon's evidence; nil when codex gave none
		})
	}
	return nil
}

// tool announces a call once (codex may skip item.started) and reports
// its result when the item completes.
func (p *parser) tool(it *item, done bool, call backend.ToolCall, finish func(*backend.ToolCall)) []backend.Event {
	var events []backend.Event
	if !p.announced[it.ID] {
		p.announced[it.ID] = true
		announced := call
		events = append(events, backend.Event{Kind: backend.EventToolCall, Tool: &announced})
	}
	if done {
		delete(p.announced, it.ID)
		finish(&call)
		events = append(events, backend.Event{Kind: backend.EventToolResult, Tool: &call})
	}
	return events
}

// outcome judges the run from its events: a failed turn or an error
// nothing recovered from, a turn that never completed, or a failed MCP
// call that left the agent without an answer all fail it.
func (p *parser) outcome() error {
	switch {
	case p.failure != "":
		return classify(errors.New("codex: " + p.failure))
	case !p.completed:
		return errors.New("codex: the turn ended without completing")
	case !p.answered && p.toolErr != "":
		return fmt.Errorf("codex: an MCP tool call failed and the agent gave no answer: %s", p.toolErr)
	}
	return nil
}

// permanentHints mark errors that a retry cannot fix: credentials and
// configuration.
var permanentHints = []string{
	"401 unauthorized", "403 forbidden", "invalid_api_key", "incorrect api key",
	"missing environment variable", "error loading config", "model_not_found",
}

// classify marks err permanent when its message says retrying is futile.
func classify(err error) error {
	msg := strings.ToLower(err.Error())
	for _, h := range permanentHints {
		if strings.Contains(msg, h) {
			return backend.Permanent(err)
		}
	}
	return err
}
