package host

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/triggers"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// scriptedModel starts the project's scripted model server (Anthropic and
// OpenAI APIs) in a helper process, answering turns in order, and
// returns its URL. A process of its own: host may not import
// plugins/internal/fakemodel.
func scriptedModel(t *testing.T, turns ...map[string]any) string {
	t.Helper()
	bin := testkit.Build(t, "plugins/internal/fakemodel/fakemodeld")
	script, _ := json.Marshal(map[string]any{"turns": turns})
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "AGENT_WORKER_FAKEMODEL="+string(script))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe() // closed at cleanup: the helper's cue to end
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "url "); ok {
			go func() { // drain the rest so the helper never blocks on stdout
				for sc.Scan() {
				}
			}()
			return url
		}
	}
	t.Fatal("the model helper ended without saying its url")
	return ""
}

// A run of the sdk backend is its model calls and tool calls, each a span
// under the run's: as many chat spans as the script has turns, with the
// tokens the script gives and why the model stopped, the tool call the
// model made in between, and the calls in the gen_ai.client.* metrics.
func TestSDKRunIsChatSpans(t *testing.T) {
	t.Parallel()
	url := scriptedModel(t,
		map[string]any{"Tools": []any{map[string]any{"ID": "call_1", "Name": "team_members"}}, "InputTokens": 100, "OutputTokens": 10},
		map[string]any{"Text": "all here", "InputTokens": 150, "OutputTokens": 20},
	)
	exp, reader := tracetest.NewInMemoryExporter(), sdkmetric.NewManualReader()
	th, dir := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { c.TraceExporter, c.MetricReader = exp, reader })
	testkit.Install(t, testkit.Build(t, "cmd/agent-worker-backend-sdk"), dir, "agent-worker-backend-sdk")
	waitPlugins(t, th, "the sdk backend", func(ps []api.Plugin) bool {
		for _, p := range ps {
			if p.Name == "sdk" {
				return true
			}
		}
		return false
	})
	file := filepath.Join(t.TempDir(), "solo.yaml")
	saveFile(t, file, `name: solo
agents:
  alice:
    backend: sdk
    model: qwen2.5-coder
    provider: {name: vllm, base_url: `+url+`/v1}
kickoff: "@alice who is on the team?"
`)
	ctx := context.Background()
	if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	var got tracetest.SpanStubs
	testkit.WaitFor(t, "the run's span", func() bool {
		if err := th.tel.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		got = exp.GetSpans()
		for _, s := range got {
			if s.Name == "invoke_agent alice" {
				return true
			}
		}
		return false
	})
	var run tracetest.SpanStub
	var chats, tools []tracetest.SpanStub
	for _, s := range got {
		switch {
		case s.Name == "invoke_agent alice":
			run = s
		case s.Name == "chat qwen2.5-coder":
			chats = append(chats, s)
		case s.Name == "execute_tool team_members" && attrOf(s, "agent_worker.tool.source") == "backend":
			tools = append(tools, s)
		}
	}
	if attrOf(run, "agent_worker.run.outcome") != "succeeded" {
		t.Fatalf("the run ended %q: %+v", attrOf(run, "agent_worker.run.outcome"), run.Status)
	}
	want := []struct{ in, out, finish string }{{"100", "10", `["tool_calls"]`}, {"150", "20", `["stop"]`}}
	if len(chats) != len(want) {
		t.Fatalf("%d chat spans, want one per scripted turn (%d)", len(chats), len(want))
	}
	for i, w := range want {
		c := chats[i]
		if c.Parent.SpanID() != run.SpanContext.SpanID() {
			t.Errorf("chat %d: parent %s, want the run's %s", i, c.Parent.SpanID(), run.SpanContext.SpanID())
		}
		if in, out, f := attrOf(c, "gen_ai.usage.input_tokens"), attrOf(c, "gen_ai.usage.output_tokens"), attrOf(c, "gen_ai.response.finish_reasons"); in != w.in || out != w.out || f != w.finish {
			t.Errorf("chat %d: %s in, %s out, finish %s; want %s, %s, %s", i, in, out, f, w.in, w.out, w.finish)
		}
		if attrOf(c, "gen_ai.system") != "vllm" || attrOf(c, "gen_ai.request.model") != "qwen2.5-coder" {
			t.Errorf("chat %d: system %q model %q", i, attrOf(c, "gen_ai.system"), attrOf(c, "gen_ai.request.model"))
		}
		if c.StartTime.Before(run.StartTime) || c.EndTime.After(run.EndTime) || c.EndTime.Before(c.StartTime) {
			t.Errorf("chat %d runs %v–%v, outside its run's %v–%v", i, c.StartTime, c.EndTime, run.StartTime, run.EndTime)
		}
	}
	if len(tools) != 1 || tools[0].Parent.SpanID() != run.SpanContext.SpanID() || attrOf(tools[0], "gen_ai.tool.call.id") != "call_1" {
		t.Fatalf("backend tool spans %+v, want one execute_tool team_members (call_1) under the run", tools)
	}
	// The tool was called after the first model call ended (its span is
	// from the call's event to its result's, as the daemon got them).
	if tools[0].StartTime.Before(chats[0].EndTime) || tools[0].EndTime.After(run.EndTime) {
		t.Errorf("tool call %v–%v is not after the first model call (%v) in the run (to %v)", tools[0].StartTime, tools[0].EndTime, chats[0].EndTime, run.EndTime)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[int64]); ok && m.Name == "gen_ai.client.token.usage" {
				for _, p := range h.DataPoints {
					v, _ := p.Attributes.Value("gen_ai.token.type")
					sums[v.Emit()] += p.Sum
				}
			}
		}
	}
	if sums["input"] != 250 || sums["output"] != 30 {
		t.Errorf("gen_ai.client.token.usage sums = %v, want input 250, output 30", sums)
	}
}

func attrOf(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// A webhook delivery is the root of its trace, as a kickoff is: the run
// its message wakes is the child of the delivery's invoke_workflow span.
func TestWebhookDeliveryIsOneTrace(t *testing.T) {
	t.Parallel()
	env := &testEnv{vars: map[string]string{"HOOK_SECRET": "s3cret"}}
	exp := tracetest.NewInMemoryExporter()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) { c.LookupEnv, c.TraceExporter = env.lookup, exp })
	file := filepath.Join(t.TempDir(), "hooks.yaml")
	saveFile(t, file, hooksYAML)
	ctx := context.Background()
	if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	const body = `{"action": "opened", "pull_request": {"number": 7, "html_url": "https://github.com/acme/app/pull/7"}}`
	if code, res, e := th.hook(t, hookCall{path: "/hooks/hooks/pr-opened", body: body, signature: triggers.Sign("s3cret", []byte(body)), delivery: "d-1"}); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %+v %+v", code, res, e)
	}
	byName := map[string]tracetest.SpanStub{}
	testkit.WaitFor(t, "the reviewer's run span", func() bool {
		if err := th.tel.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for _, s := range exp.GetSpans() {
			byName[s.Name] = s
		}
		return byName["invoke_agent reviewer"].Name != ""
	})
	hook, run := byName["invoke_workflow hooks"], byName["invoke_agent reviewer"]
	if attrOf(hook, "agent_worker.trigger") != "webhook" || attrOf(hook, "agent_worker.webhook") != "pr-opened" || attrOf(hook, "agent_worker.webhook.delivery") != "d-1" {
		t.Fatalf("delivery span %q: %v", hook.Name, hook.Attributes)
	}
	if run.Parent.SpanID() != hook.SpanContext.SpanID() || run.SpanContext.TraceID() != hook.SpanContext.TraceID() {
		t.Errorf("the run's parent is %s in trace %s; want the delivery's %s in %s", run.Parent.SpanID(), run.SpanContext.TraceID(), hook.SpanContext.SpanID(), hook.SpanContext.TraceID())
	}
}
