package telemetry

import (
	"context"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.27.0"
	"go.opentelemetry.io/otel/trace"
)

// The GenAI semantic conventions' names. gen_ai.operation.name,
// gen_ai.system, gen_ai.request.model and gen_ai.usage.* come from the
// semconv package the SDK ships (v1.27.0, pinned with it); the agent and
// tool names and the invoke_* / execute_tool operations are the
// conventions' later additions, spelled here as they name them.
const (
	OpInvokeWorkflow = "invoke_workflow"
	OpInvokeAgent    = "invoke_agent"
	OpExecuteTool    = "execute_tool"

	AgentNameKey  = attribute.Key("gen_ai.agent.name")
	AgentIDKey    = attribute.Key("gen_ai.agent.id")
	ToolNameKey   = attribute.Key("gen_ai.tool.name")
	ToolCallIDKey = attribute.Key("gen_ai.tool.call.id")
	// WorkflowKey names the workflow (and tag) a span belongs to.
	WorkflowKey = attribute.Key("gen_ai.workflow.name")

	// The daemon's own, where the conventions have no name.
	TagKey      = attribute.Key("agent_worker.tag")
	BackendKey  = attribute.Key("agent_worker.backend")
	RunIDKey    = attribute.Key("agent_worker.run.id")
	AttemptKey  = attribute.Key("agent_worker.run.attempt")
	OutcomeKey  = attribute.Key("agent_worker.run.outcome")
	CostKey     = attribute.Key("agent_worker.run.cost_usd")
	TriggerKey  = attribute.Key("agent_worker.trigger")
	WebhookKey  = attribute.Key("agent_worker.webhook")
	DeliveryKey = attribute.Key("agent_worker.webhook.delivery")
	MessageKey  = attribute.Key("agent_worker.message.seq")
	RefusalName = "refused" // the span event of a gate or sandbox refusal
)

// system is gen_ai.system for a backend: the provider behind it where the
// backend is one provider's CLI, else the daemon's name for it.
func system(backend string) string {
	switch backend {
	case "claude":
		return "anthropic"
	case "codex":
		return "openai"
	}
	return backend
}

// Workflow starts the invoke_workflow span of a workflow's kickoff or a
// trigger's message: the root of the trace its agents' runs join. how is
// what started it: kickoff, webhook, cron or interval.
func Workflow(ctx context.Context, t trace.Tracer, workflow, tag, how string) (context.Context, trace.Span) {
	return t.Start(ctx, OpInvokeWorkflow+" "+workflow, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameKey.String(OpInvokeWorkflow),
			WorkflowKey.String(workflow), TagKey.String(tag), TriggerKey.String(how)))
}

// AgentRun is what the invoke_agent span of a run says from its start.
type AgentRun struct {
	RunID, Workflow, Tag, Agent, Backend, Model string
	Attempt                                     int
	// Causes are the traceparents of the messages the run was woken for,
	// oldest first: the first is its parent (the run joins the sender's
	// trace) and every one is a link (the scheduler's wake).
	Causes []string
}

// Agent starts a run's invoke_agent span.
func (t *Telemetry) Agent(ctx context.Context, r AgentRun) (context.Context, trace.Span) {
	var links []trace.Link
	parent := trace.SpanContext{}
	for _, tp := range r.Causes {
		sc := FromTraceparent(tp)
		if !sc.IsValid() {
			continue
		}
		if !parent.IsValid() {
			parent = sc
		}
		links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("agent_worker.link", "wake")}})
	}
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	return t.Tracer().Start(ctx, OpInvokeAgent+" "+r.Agent, trace.WithSpanKind(trace.SpanKindInternal), trace.WithLinks(links...),
		trace.WithAttributes(semconv.GenAIOperationNameKey.String(OpInvokeAgent), t.providerAttr(system(r.Backend)),
			AgentNameKey.String(r.Agent), AgentIDKey.String(r.Workflow+":"+r.Tag+"/"+r.Agent), semconv.GenAIRequestModel(r.Model),
			WorkflowKey.String(r.Workflow), TagKey.String(r.Tag), BackendKey.String(r.Backend),
			RunIDKey.String(r.RunID), AttemptKey.Int(r.Attempt)))
}

// RunEnd is how a run ended, for its invoke_agent span.
type RunEnd struct {
	Outcome                   string // the run's state: succeeded, failed, cancelled, timed_out
	InputTokens, OutputTokens int64
	CostUSD                   float64
	Err                       error
}

// EndAgent records a run's end on its span and ends it.
func EndAgent(span trace.Span, e RunEnd) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(OutcomeKey.String(e.Outcome), semconv.GenAIUsageInputTokens(int(e.InputTokens)),
		semconv.GenAIUsageOutputTokens(int(e.OutputTokens)), CostKey.Float64(e.CostUSD))
	if e.Err != nil {
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End()
}

// ToolStart starts the execute_tool spans of one agent's calls of one of
// the daemon's MCP tools. It is made once, when the tool is registered
// for the agent: a call then only starts the span, its name and
// attributes built already.
type ToolStart struct {
	name string
	opts []trace.SpanStartOption
}

// NewToolStart is the ToolStart of agent's calls of tool.
func NewToolStart(tool, agent string) ToolStart {
	return ToolStart{name: OpExecuteTool + " " + tool, opts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameKey.String(OpExecuteTool), ToolNameKey.String(tool), AgentNameKey.String(agent))}}
}

// Start starts one call's span, under its run's span (parent, the run's
// traceparent; "" for an outside agent's call, a trace of its own).
func (ts ToolStart) Start(ctx context.Context, t trace.Tracer, parent string) (context.Context, trace.Span) {
	return t.Start(WithTraceparent(ctx, parent), ts.name, ts.opts...)
}

// Refused records on span that a gate or the sandbox refused what it
// was doing, and why.
func Refused(span trace.Span, by, why string) {
	span.AddEvent(RefusalName, trace.WithAttributes(attribute.String("agent_worker.refused.by", by), attribute.String("agent_worker.refused.why", why)))
}

// RunEnv is what a run's environment carries of the trace (documented in
// docs/operations.md "Traces"): TRACEPARENT, the run's span, for a CLI
// that joins it; and while tracing is on, where the user's OTLP collector
// is, as the daemon was given it, so a CLI with telemetry of its own
// (Claude Code) sends there too. Headers are not passed: they often hold
// a collector's key, which an agent's env: can give on purpose.
func (t *Telemetry) RunEnv(traceparent string) map[string]string {
	if traceparent == "" || !t.On() {
		return nil
	}
	env := t.CollectorEnv()
	if env == nil {
		env = map[string]string{}
	}
	env["TRACEPARENT"] = traceparent
	return env
}

// CollectorEnv is the part of RunEnv that says where the user's OTLP
// collector is (nil while tracing is off or goes to a test's exporter):
// the sandbox lets a run reach its port, as it does a model's.
func (t *Telemetry) CollectorEnv() map[string]string {
	if !t.On() || t.endpoint == "" {
		return nil
	}
	env := map[string]string{}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	if t.flag != "" { // --otlp-endpoint wins, as for the daemon
		delete(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
		env["OTEL_EXPORTER_OTLP_ENDPOINT"] = t.flag
	}
	return env
}
