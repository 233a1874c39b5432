package telemetry

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.27.0"
	"go.opentelemetry.io/otel/trace"
)

// OpChat is gen_ai.operation.name of a model call.
const OpChat = "chat"

// The names that differ between the GenAI conventions of the pinned
// semconv package (the default) and their newest experimental version,
// which OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental asks for.
const (
	// ProviderKey replaces gen_ai.system in the newest conventions.
	ProviderKey = attribute.Key("gen_ai.provider.name")
	// InputMessagesKey and OutputMessagesKey carry a call's messages as
	// JSON in the newest conventions; v1.27.0 puts them in the
	// gen_ai.content.prompt and gen_ai.content.completion events.
	InputMessagesKey  = attribute.Key("gen_ai.input.messages")
	OutputMessagesKey = attribute.Key("gen_ai.output.messages")
	// ToolArgsKey and ToolResultKey carry a backend tool call's arguments
	// and result in the newest conventions (content capture only).
	ToolArgsKey   = attribute.Key("gen_ai.tool.call.arguments")
	ToolResultKey = attribute.Key("gen_ai.tool.call.result")
	// SourceKey tells a tool call the backend made (backend) from one of
	// the daemon's MCP tools as the daemon served it (daemon).
	SourceKey = attribute.Key("agent_worker.tool.source")

	optInLatest = "gen_ai_latest_experimental"
)

// latestOptIn says whether OTEL_SEMCONV_STABILITY_OPT_IN (a comma list)
// asks for the newest GenAI names.
func latestOptIn(v string) bool {
	for _, s := range strings.Split(v, ",") {
		if strings.TrimSpace(s) == optInLatest {
			return true
		}
	}
	return false
}

// provider is the attribute that names the model's provider, under the
// conventions in use.
func (t *Telemetry) providerAttr(name string) attribute.KeyValue {
	if t != nil && t.latest {
		return ProviderKey.String(name)
	}
	return semconv.GenAISystemKey.String(name)
}

// Latest says whether spans carry the newest GenAI names.
func (t *Telemetry) Latest() bool { return t != nil && t.latest }

// CaptureContent says whether chat and tool spans carry the messages
// (--otel-capture-content or
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true): off by
// default, since prompts and replies hold the team's work.
func (t *Telemetry) CaptureContent() bool { return t != nil && t.content }

// Chat is one model call a run's backend made, as it reported it.
type Chat struct {
	// Provider is the model's provider (anthropic, openai, deepseek …);
	// Agent the agent whose run it is.
	Provider, Agent      string
	Model, ResponseModel string
	Start, End           time.Time
	InputTokens          int64
	OutputTokens         int64
	FinishReasons        []string
	// Input is what the call added to the conversation (the run's prompt,
	// or the results of the last turn's tool calls) and Output the reply's
	// text: kept only when CaptureContent.
	Input, Output string
}

// Chat records c as a chat span under ctx's span (the run's), from its
// start to its end, and as a point of the gen_ai.client.* metrics.
func (t *Telemetry) Chat(ctx context.Context, c Chat) {
	if t == nil {
		return
	}
	if c.End.IsZero() {
		c.End = time.Now()
	}
	if c.Start.IsZero() || c.Start.After(c.End) {
		c.Start = c.End
	}
	common := []attribute.KeyValue{semconv.GenAIOperationNameKey.String(OpChat), t.providerAttr(c.Provider), semconv.GenAIRequestModel(c.Model)}
	if c.ResponseModel != "" {
		common = append(common, semconv.GenAIResponseModel(c.ResponseModel))
	}
	t.record(ctx, c, common)
	if !t.On() {
		return
	}
	attrs := append(common, semconv.GenAIUsageInputTokens(int(c.InputTokens)), semconv.GenAIUsageOutputTokens(int(c.OutputTokens)),
		AgentNameKey.String(c.Agent))
	if len(c.FinishReasons) > 0 {
		attrs = append(attrs, semconv.GenAIResponseFinishReasons(c.FinishReasons...))
	}
	_, span := t.tracer.Start(ctx, OpChat+" "+c.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(c.Start), trace.WithAttributes(attrs...))
	if t.content {
		finish := ""
		if len(c.FinishReasons) > 0 {
			finish = c.FinishReasons[0]
		}
		if t.latest {
			span.SetAttributes(InputMessagesKey.String(messages(message{Role: "user", Parts: textPart(c.Input)})),
				OutputMessagesKey.String(messages(message{Role: "assistant", Parts: textPart(c.Output), FinishReason: finish})))
		} else {
			span.AddEvent("gen_ai.content.prompt", trace.WithTimestamp(c.Start), trace.WithAttributes(semconv.GenAIPrompt(c.Input)))
			span.AddEvent("gen_ai.content.completion", trace.WithTimestamp(c.End), trace.WithAttributes(semconv.GenAICompletion(c.Output)))
		}
	}
	span.End(trace.WithTimestamp(c.End))
}

// message is one message of gen_ai.input.messages / output.messages.
type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

type part struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

func textPart(s string) []part {
	if s == "" {
		return []part{}
	}
	return []part{{Type: "text", Content: s}}
}

func messages(m ...message) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// record adds c to the gen_ai.client.* histograms, when metrics are on.
func (t *Telemetry) record(ctx context.Context, c Chat, attrs []attribute.KeyValue) {
	if t.tokens == nil {
		return
	}
	set := metric.WithAttributes(attrs...)
	t.duration.Record(ctx, c.End.Sub(c.Start).Seconds(), set)
	in := append(attrs[:len(attrs):len(attrs)], semconv.GenAITokenTypeInput)
	out := append(attrs[:len(attrs):len(attrs)], semconv.GenAITokenTypeCompletion)
	t.tokens.Record(ctx, c.InputTokens, metric.WithAttributes(in...))
	t.tokens.Record(ctx, c.OutputTokens, metric.WithAttributes(out...))
}

// BackendTool is a tool call a run's backend made and reported (its own
// tools: a shell, a file edit, another MCP server's, or the daemon's).
type BackendTool struct {
	ID, Name, Agent string
}

// StartBackendTool starts the execute_tool span of a call the backend
// reported, under ctx's span (the run's); the caller ends it with
// EndBackendTool when its result comes, or when the run ends without one.
func (t *Telemetry) StartBackendTool(ctx context.Context, c BackendTool, args string) trace.Span {
	if !t.On() {
		return trace.SpanFromContext(context.Background()) // a no-op span
	}
	_, span := t.tracer.Start(ctx, OpExecuteTool+" "+c.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameKey.String(OpExecuteTool), ToolNameKey.String(c.Name), ToolCallIDKey.String(c.ID),
			AgentNameKey.String(c.Agent), SourceKey.String("backend")))
	if t.content && t.latest && args != "" {
		span.SetAttributes(ToolArgsKey.String(args))
	}
	return span
}

// EndBackendTool ends a backend tool call's span with its result: an
// error result is the span's error status.
func (t *Telemetry) EndBackendTool(span trace.Span, result string, isError bool) {
	if !span.IsRecording() {
		return
	}
	if t.content && t.latest && result != "" {
		span.SetAttributes(ToolResultKey.String(result))
	}
	if isError {
		span.SetStatus(codes.Error, firstLine(result))
	}
	span.End()
}

// firstLine is s up to its first newline, at most 200 bytes: a status
// description, not the whole output.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
