package runner

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/agent-worker/agent-worker/host/telemetry"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/llm"
	"github.com/agent-worker/agent-worker/store"
)

// callTrace turns a run's events into the spans of the calls its backend
// made, children of the run's invoke_agent span: a chat span per model
// call (from the usage event that ends it, which says when it started)
// and an execute_tool span from each tool call to its result. A refusal
// lands on the tool call it stopped when one is open, else on the run.
// The run's event callback is its only caller, one event at a time.
type callTrace struct {
	tel      *telemetry.Telemetry
	ctx      context.Context // carries the run's span
	run      trace.Span
	agent    string
	provider string
	// input and output are the next chat span's messages, kept only when
	// the user asked for content: the run's prompt or the last turn's tool
	// results, and the reply's text.
	input, output strings.Builder
	open          map[string]trace.Span // tool calls without a result yet, by id
	order         []string              // open's ids, oldest first
}

func newCallTrace(ctx context.Context, tel *telemetry.Telemetry, run trace.Span, agent store.Agent, inbox []store.Message) *callTrace {
	c := &callTrace{tel: tel, ctx: ctx, run: run, agent: agent.Name, provider: modelProvider(agent), open: map[string]trace.Span{}}
	if tel.CaptureContent() {
		if agent.System != "" {
			c.input.WriteString(agent.System + "\n\n")
		}
		for _, m := range inbox {
			fmt.Fprintf(&c.input, "%s: %s\n", m.Sender, m.Content)
		}
	}
	return c
}

// modelProvider is the provider of an agent's model: its provider
// config's name, else its model's prefix (anthropic/claude-…), else the
// one its name suggests, else the backend's (claude is anthropic's, codex
// openai's).
func modelProvider(agent store.Agent) string {
	model, backendName := agent.Model, agent.Backend
	if p := agent.Config.Provider; p != nil && p.Name != "" {
		return p.Name
	}
	if p, _, ok := strings.Cut(model, "/"); ok {
		return p
	}
	if p := llm.GuessProvider(model); p != "" {
		return p
	}
	switch backendName {
	case "claude":
		return "anthropic"
	case "codex":
		return "openai"
	}
	return backendName
}

func (c *callTrace) event(e backend.Event) {
	content := c.tel.CaptureContent()
	switch e.Kind {
	case backend.EventText:
		if content {
			c.output.WriteString(e.Text)
		}
	case backend.EventUsage:
		if e.Usage == nil || e.Usage.Call == nil {
			return
		}
		mc := e.Usage.Call
		c.tel.Chat(c.ctx, telemetry.Chat{Provider: c.provider, Agent: c.agent, Model: mc.Model, ResponseModel: mc.ResponseModel,
			Start: mc.Start, End: mc.End, InputTokens: mc.InputTokens, OutputTokens: mc.OutputTokens, FinishReasons: mc.FinishReasons,
			Input: c.input.String(), Output: c.output.String()})
		c.input.Reset()
		c.output.Reset()
	case backend.EventToolCall:
		if e.Tool == nil || !c.tel.On() {
			return
		}
		id := cmp.Or(e.Tool.ID, e.Tool.Name)
		if old, ok := c.open[id]; ok { // the same id again: the first had no result
			old.End()
			c.forget(id)
		}
		c.open[id] = c.tel.StartBackendTool(c.ctx, telemetry.BackendTool{ID: e.Tool.ID, Name: e.Tool.Name, Agent: c.agent}, string(e.Tool.Args))
		c.order = append(c.order, id)
	case backend.EventToolResult:
		if e.Tool == nil {
			return
		}
		if content {
			fmt.Fprintf(&c.input, "%s: %s\n", e.Tool.Name, e.Tool.Result)
		}
		id := cmp.Or(e.Tool.ID, e.Tool.Name)
		if span, ok := c.open[id]; ok {
			c.tel.EndBackendTool(span, e.Tool.Result, e.Tool.IsError)
			c.forget(id)
		}
	case backend.EventSandbox:
		telemetry.Refused(c.on(), "sandbox", e.Text)
	case backend.EventGate:
		telemetry.Refused(c.on(), "gate", e.Text)
	}
}

// on is the span a refusal belongs to: the one tool call open, else the
// run (none open, or several and no telling which).
func (c *callTrace) on() trace.Span {
	if len(c.order) == 1 {
		return c.open[c.order[0]]
	}
	return c.run
}

func (c *callTrace) forget(id string) {
	delete(c.open, id)
	for i, o := range c.order {
		if o == id {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}

// end ends the tool calls the run left without a result (it failed or
// was stopped mid-call), before the run's own span ends.
func (c *callTrace) end() {
	for _, id := range c.order {
		c.tel.EndBackendTool(c.open[id], "the run ended before the tool call's result", true)
	}
	c.open, c.order = map[string]trace.Span{}, nil
}
