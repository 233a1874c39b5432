package telemetry

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// testTelemetry is tracing and metrics into memory, with env as the
// daemon's environment.
func testTelemetry(t *testing.T, vars map[string]string, capture bool) (*Telemetry, *tracetest.InMemoryExporter, *sdkmetric.ManualReader) {
	t.Helper()
	exp, reader := tracetest.NewInMemoryExporter(), sdkmetric.NewManualReader()
	tel, err := New(context.Background(), Config{Exporter: exp, MetricReader: reader, CaptureContent: capture, Getenv: env(vars)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Close(context.Background()) })
	return tel, exp, reader
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func spans(t *testing.T, tel *Telemetry, exp *tracetest.InMemoryExporter) map[string]tracetest.SpanStub {
	t.Helper()
	if err := tel.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		m[s.Name] = s
	}
	return m
}

var call = Chat{Provider: "anthropic", Agent: "alice", Model: "claude-sonnet-4-5", ResponseModel: "claude-sonnet-4-5-20250929",
	Start: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), End: time.Date(2025, 3, 1, 12, 0, 2, 500e6, time.UTC),
	InputTokens: 1200, OutputTokens: 80, FinishReasons: []string{"tool_use"}, Input: "bob: @alice fix the build", Output: "Looking at the log."}

// A model call is a chat span under the run's, from the call's start to
// its end as the backend reported them, named and attributed as the
// conventions say, in v1.27.0's names unless the newest are asked for.
func TestChatSpan(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		optIn     string
		provider  string // the attribute that names it
		notSystem string // the one it must not carry
	}{
		"v1.27.0":                    {provider: "gen_ai.system", notSystem: "gen_ai.provider.name"},
		"gen_ai_latest_experimental": {optIn: "http,gen_ai_latest_experimental", provider: "gen_ai.provider.name", notSystem: "gen_ai.system"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tel, exp, _ := testTelemetry(t, map[string]string{"OTEL_SEMCONV_STABILITY_OPT_IN": tc.optIn}, false)
			ctx, run := tel.Agent(context.Background(), AgentRun{RunID: "r1", Agent: "alice", Backend: "sdk", Model: "anthropic/claude-sonnet-4-5"})
			tel.Chat(ctx, call)
			run.End()
			got := spans(t, tel, exp)
			chat, agent := got["chat claude-sonnet-4-5"], got["invoke_agent alice"]
			if chat.Name == "" {
				t.Fatalf("no chat span among %v", got)
			}
			if chat.Parent.SpanID() != agent.SpanContext.SpanID() || chat.SpanKind != trace.SpanKindClient {
				t.Errorf("chat span: parent %s kind %s, want the run's %s, client", chat.Parent.SpanID(), chat.SpanKind, agent.SpanContext.SpanID())
			}
			if !chat.StartTime.Equal(call.Start) || !chat.EndTime.Equal(call.End) {
				t.Errorf("chat span runs %v to %v, want the call's %v to %v", chat.StartTime, chat.EndTime, call.Start, call.End)
			}
			a := attrs(chat.Attributes)
			for k, v := range map[string]string{"gen_ai.operation.name": "chat", tc.provider: "anthropic", "gen_ai.request.model": "claude-sonnet-4-5",
				"gen_ai.response.model": "claude-sonnet-4-5-20250929", "gen_ai.usage.input_tokens": "1200", "gen_ai.usage.output_tokens": "80",
				"gen_ai.response.finish_reasons": `["tool_use"]`, "gen_ai.agent.name": "alice"} {
				if a[k] != v {
					t.Errorf("chat %s = %q, want %q", k, a[k], v)
				}
			}
			if _, ok := a[tc.notSystem]; ok {
				t.Errorf("chat carries %s under %s", tc.notSystem, name)
			}
			if _, ok := attrs(agent.Attributes)[tc.provider]; !ok {
				t.Errorf("invoke_agent lacks %s under %s", tc.provider, name)
			}
			// No text of the conversation unless asked for.
			for _, kv := range chat.Attributes {
				if strings.Contains(kv.Value.Emit(), "fix the build") {
					t.Errorf("chat span carries the prompt in %s without content capture", kv.Key)
				}
			}
			if len(chat.Events) != 0 {
				t.Errorf("chat span has events %v without content capture", chat.Events)
			}
		})
	}
}

// With content capture the messages are on the chat span: as
// gen_ai.content.* events in v1.27.0, as gen_ai.*.messages JSON in the
// newest conventions.
func TestChatContent(t *testing.T) {
	t.Parallel()
	t.Run("v1.27.0 by the variable", func(t *testing.T) {
		t.Parallel()
		tel, exp, _ := testTelemetry(t, map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}, false)
		tel.Chat(context.Background(), call)
		chat := spans(t, tel, exp)["chat claude-sonnet-4-5"]
		ev := map[string]string{}
		for _, e := range chat.Events {
			for k, v := range attrs(e.Attributes) {
				ev[e.Name+" "+k] = v
			}
		}
		if ev["gen_ai.content.prompt gen_ai.prompt"] != call.Input || ev["gen_ai.content.completion gen_ai.completion"] != call.Output {
			t.Errorf("content events = %v, want the prompt and the completion", ev)
		}
	})
	t.Run("latest by the flag", func(t *testing.T) {
		t.Parallel()
		tel, exp, _ := testTelemetry(t, map[string]string{"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}, true)
		tel.Chat(context.Background(), call)
		a := attrs(spans(t, tel, exp)["chat claude-sonnet-4-5"].Attributes)
		if want := `[{"role":"user","parts":[{"type":"text","content":"bob: @alice fix the build"}]}]`; a["gen_ai.input.messages"] != want {
			t.Errorf("gen_ai.input.messages = %s, want %s", a["gen_ai.input.messages"], want)
		}
		if want := `[{"role":"assistant","parts":[{"type":"text","content":"Looking at the log."}],"finish_reason":"tool_use"}]`; a["gen_ai.output.messages"] != want {
			t.Errorf("gen_ai.output.messages = %s, want %s", a["gen_ai.output.messages"], want)
		}
	})
}

// Each model call is a point of gen_ai.client.token.usage (input and
// output apart) and gen_ai.client.operation.duration, by model and
// provider; metrics need no tracing.
func TestChatMetrics(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	tel, err := New(context.Background(), Config{MetricReader: reader, Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close(context.Background())
	if tel.On() || !tel.MetricsOn() {
		t.Fatalf("On = %v, MetricsOn = %v; want metrics alone", tel.On(), tel.MetricsOn())
	}
	second := call
	second.InputTokens, second.OutputTokens, second.End = 1300, 20, call.Start.Add(500*time.Millisecond)
	tel.Chat(context.Background(), call)
	tel.Chat(context.Background(), second)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	tokens, ok := got["gen_ai.client.token.usage"].Data.(metricdata.Histogram[int64])
	if !ok {
		t.Fatalf("gen_ai.client.token.usage is %T, want an int64 histogram (metrics: %v)", got["gen_ai.client.token.usage"].Data, got)
	}
	sums := map[string]int64{}
	for _, p := range tokens.DataPoints {
		a := attrs(p.Attributes.ToSlice())
		if a["gen_ai.request.model"] != "claude-sonnet-4-5" || a["gen_ai.system"] != "anthropic" || a["gen_ai.operation.name"] != "chat" || p.Count != 2 {
			t.Errorf("token point %v: %d calls, want 2 of claude-sonnet-4-5 by anthropic", a, p.Count)
		}
		sums[a["gen_ai.token.type"]] = p.Sum
	}
	if sums["input"] != 2500 || sums["output"] != 100 {
		t.Errorf("token sums = %v, want input 2500, output 100", sums)
	}
	if u := got["gen_ai.client.token.usage"].Unit; u != "{token}" {
		t.Errorf("token unit %q", u)
	}
	dur, ok := got["gen_ai.client.operation.duration"].Data.(metricdata.Histogram[float64])
	if !ok || len(dur.DataPoints) != 1 || dur.DataPoints[0].Count != 2 || dur.DataPoints[0].Sum != 3 || got["gen_ai.client.operation.duration"].Unit != "s" {
		t.Errorf("gen_ai.client.operation.duration = %+v, want 2 calls, 3 s in all", got["gen_ai.client.operation.duration"])
	}
}

// Metrics over OTLP are on when asked and a collector is named; asked
// without one, or for an exporter the daemon has not, is an error.
func TestMetricsFromEnvironment(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		flag    bool
		env     map[string]string
		on      bool
		wantErr string
	}{
		"not asked":    {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}},
		"prometheus":   {env: map[string]string{"OTEL_METRICS_EXPORTER": "prometheus", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}},
		"variable":     {env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, on: true},
		"flag, grpc":   {flag: true, env: map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, on: true},
		"no collector": {env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}, wantErr: "need a collector"},
		"unknown":      {env: map[string]string{"OTEL_METRICS_EXPORTER": "console"}, wantErr: `OTEL_METRICS_EXPORTER "console"`},
		"bad protocol": {flag: true, env: map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"}, wantErr: "grpc or http/protobuf"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, err := metricReader(context.Background(), Config{Metrics: tc.flag}, env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("metricReader = %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || (r != nil) != tc.on {
				t.Fatalf("metricReader = %v, %v; want on = %v", r, err, tc.on)
			}
			if r != nil {
				r.Shutdown(context.Background())
			}
		})
	}
}

// A backend's tool call is an execute_tool span under the run's from its
// call to its result; an error result is its status.
func TestBackendTool(t *testing.T) {
	t.Parallel()
	tel, exp, _ := testTelemetry(t, nil, false)
	ctx, run := tel.Agent(context.Background(), AgentRun{Agent: "alice", Backend: "sdk"})
	span := tel.StartBackendTool(ctx, BackendTool{ID: "call_1", Name: "run_shell", Agent: "alice"}, `{"command":"go vet"}`)
	tel.EndBackendTool(span, "exit status 1\nvet: x.go:3", true)
	run.End()
	got := spans(t, tel, exp)
	tool := got["execute_tool run_shell"]
	if tool.Parent.SpanID() != got["invoke_agent alice"].SpanContext.SpanID() {
		t.Errorf("tool span's parent %s, want the run's", tool.Parent.SpanID())
	}
	a := attrs(tool.Attributes)
	if a["gen_ai.tool.name"] != "run_shell" || a["gen_ai.tool.call.id"] != "call_1" || a["agent_worker.tool.source"] != "backend" {
		t.Errorf("tool attributes %v", a)
	}
	if _, ok := a["gen_ai.tool.call.arguments"]; ok {
		t.Error("tool span carries its arguments without content capture")
	}
	if tool.Status.Code != codes.Error || tool.Status.Description != "exit status 1" {
		t.Errorf("tool status = %+v, want the error's first line", tool.Status)
	}
}
