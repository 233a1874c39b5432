package host

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/telemetry"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// One kickoff is one trace: the workflow's span, the run it wakes, that
// run's tool call, and the run the call's mention wakes, each the child of
// the one before; the runs carry the GenAI attributes and their plugin
// process is handed the run's TRACEPARENT.
func TestKickoffIsOneTrace(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { c.TraceExporter = exp })
	file := filepath.Join(t.TempDir(), "pair.yaml")
	saveFile(t, file, `name: pair
agents:
  writer:
    backend: mock
    model: m-1
    config: {script: [{shell: "echo tp=$TRACEPARENT"}, {reply: "@reviewer please review"}, {usage: {input: 30, output: 7, cost: 0.01}}, {result: ""}]}
  reviewer:
    backend: mock
    config: {script: [{result: "looks good"}]}
kickoff: "@writer go"
`)
	ctx := context.Background()
	if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	waitWorkflow(t, th, api.Target{Workflow: "pair", Tag: "main"}, "both runs done", func(w api.Workflow, _ []api.Agent) bool {
		return w.Progress != nil && w.Progress.Idle && w.Progress.Runs >= 2
	})
	// A run's span ends once its process is gone, after its settle.
	var spans tracetest.SpanStubs
	byName := map[string]tracetest.SpanStub{}
	testkit.WaitFor(t, "both runs' spans", func() bool {
		if err := th.tel.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		spans = exp.GetSpans()
		for _, s := range spans {
			byName[s.Name] = s
		}
		return byName["invoke_agent writer"].Name != "" && byName["invoke_agent reviewer"].Name != ""
	})
	wf, writer, send, reviewer := byName["invoke_workflow pair"], byName["invoke_agent writer"], byName["execute_tool channel_send"], byName["invoke_agent reviewer"]
	for name, s := range map[string]tracetest.SpanStub{"invoke_workflow pair": wf, "invoke_agent writer": writer, "execute_tool channel_send": send, "invoke_agent reviewer": reviewer} {
		if !s.SpanContext.IsValid() {
			names := []string{}
			for _, s := range spans {
				names = append(names, s.Name)
			}
			t.Fatalf("no %q span among %s", name, strings.Join(names, ", "))
		}
		if s.SpanContext.TraceID() != wf.SpanContext.TraceID() {
			t.Errorf("%s is in trace %s, the kickoff in %s", name, s.SpanContext.TraceID(), wf.SpanContext.TraceID())
		}
	}
	for child, parent := range map[string][2]tracetest.SpanStub{"writer under the kickoff": {writer, wf}, "channel_send under writer": {send, writer}, "reviewer under channel_send": {reviewer, send}} {
		if parent[0].Parent.SpanID() != parent[1].SpanContext.SpanID() {
			t.Errorf("%s: parent %s, want %s", child, parent[0].Parent.SpanID(), parent[1].SpanContext.SpanID())
		}
	}
	if len(reviewer.Links) == 0 || reviewer.Links[0].SpanContext.SpanID() != send.SpanContext.SpanID() {
		t.Errorf("reviewer's run has links %+v, want the wake from channel_send", reviewer.Links)
	}
	attrs := map[attribute.Key]attribute.Value{}
	for _, kv := range writer.Attributes {
		attrs[kv.Key] = kv.Value
	}
	want := map[attribute.Key]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "writer", "gen_ai.request.model": "m-1",
		"agent_worker.backend": "mock", "agent_worker.run.outcome": "succeeded", "gen_ai.usage.input_tokens": "30", "gen_ai.usage.output_tokens": "7", "agent_worker.run.attempt": "1"}
	for k, v := range want {
		if got := attrs[k].Emit(); got != v {
			t.Errorf("writer's %s = %q, want %q", k, got, v)
		}
	}
	// The run's record and its plugin process both name its span.
	runs, err := th.client().Runs(ctx, api.RunQuery{Target: "writer@pair"})
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs: %v, %v", runs, err)
	}
	tp := telemetry.Traceparent(trace.ContextWithSpanContext(ctx, writer.SpanContext))
	run, err := th.client().GetRun(ctx, runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.TraceID != writer.SpanContext.TraceID().String() {
		t.Errorf("run's trace_id = %q, want %s", run.TraceID, writer.SpanContext.TraceID())
	}
	found := false
	for _, e := range run.Events {
		found = found || strings.Contains(string(e.Data), "tp="+tp)
	}
	if !found {
		t.Errorf("the writer's shell never saw TRACEPARENT=%s: %+v", tp, run.Events)
	}
}
