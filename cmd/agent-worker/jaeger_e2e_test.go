package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/internal/testkit"
)

// jaeger is a real Jaeger all-in-one (v2: OTLP in, the query API out),
// the binary make test-e2e builds from Jaeger's Go module.
type jaeger struct {
	OTLP, Query string // http://127.0.0.1:port
	cmd         *exec.Cmd
}

// startJaeger starts Jaeger on free ports with its in-memory store. It is
// skipped, saying how to get Jaeger, unless AGENT_WORKER_E2E_JAEGER names
// the binary (make test-e2e sets it).
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := os.Getenv("AGENT_WORKER_E2E_JAEGER")
	if bin == "" {
		t.Skip("needs Jaeger's all-in-one: make test-e2e builds it and sets AGENT_WORKER_E2E_JAEGER")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("AGENT_WORKER_E2E_JAEGER=%s: %v (make e2e-deps builds it)", bin, err)
	}
	otlp, query, queryGRPC := freeAddr(t), freeAddr(t), freeAddr(t)
	config := filepath.Join(t.TempDir(), "jaeger.yaml")
	writeFile(t, config, fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: {receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter]}
  telemetry:
    metrics: {level: none}
    logs: {level: warn}
extensions:
  jaeger_storage: {backends: {mem: {memory: {max_traces: 10000}}}}
  jaeger_query:
    storage: {traces: mem}
    http: {endpoint: "%s"}
    grpc: {endpoint: "%s"}
receivers:
  otlp: {protocols: {http: {endpoint: "%s"}}}
processors:
  batch: {timeout: 100ms}
exporters:
  jaeger_storage_exporter: {trace_storage: mem}
`, query, queryGRPC, otlp))
	j := &jaeger{OTLP: "http://" + otlp, Query: "http://" + query, cmd: exec.Command(bin, "--config", config)}
	j.cmd.Stderr = os.Stderr
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.stop)
	testkit.WaitFor(t, "Jaeger's query API", func() bool {
		resp, err := http.Get(j.Query + "/api/services")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return j
}

func (j *jaeger) stop() {
	if j.cmd.Process != nil {
		j.cmd.Process.Kill()
		j.cmd.Wait()
	}
}

// freeAddr is a free 127.0.0.1 port, as host:port.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// jaegerSpan is a span as Jaeger's query API answers it.
type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	StartTime     int64  `json:"startTime"` // µs
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	Logs []struct {
		Fields []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"fields"`
	} `json:"logs"`
}

// parent is the span s is the child of. A run's span has its cause (the
// message that woke it) as parent and as link both; Jaeger's model shows
// such a parent as FOLLOWS_FROM, so that counts when there is no CHILD_OF.
func (s jaegerSpan) parent() string {
	follows := ""
	for _, r := range s.References {
		switch {
		case r.RefType == "CHILD_OF":
			return r.SpanID
		case r.RefType == "FOLLOWS_FROM" && follows == "":
			follows = r.SpanID
		}
	}
	return follows
}

func (s jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// events are the names and texts of the span's events, one string each.
func (s jaegerSpan) events() []string {
	var out []string
	for _, l := range s.Logs {
		var parts []string
		for _, f := range l.Fields {
			parts = append(parts, fmt.Sprint(f.Key, "=", f.Value))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// traces reads service's traces back through Jaeger's query API, each as
// its spans.
func (j *jaeger) traces(t *testing.T, service string) map[string][]jaegerSpan {
	t.Helper()
	resp, err := http.Get(j.Query + "/api/traces?limit=100&lookback=1h&service=" + service)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data []struct {
			TraceID string       `json:"traceID"`
			Spans   []jaegerSpan `json:"spans"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("Jaeger's /api/traces: %v", err)
	}
	out := map[string][]jaegerSpan{}
	for _, tr := range body.Data {
		out[tr.TraceID] = append(out[tr.TraceID], tr.Spans...)
	}
	return out
}

// traceWith is the trace holding a span named op, and that span.
func traceWith(traces map[string][]jaegerSpan, op string) ([]jaegerSpan, jaegerSpan, bool) {
	for _, spans := range traces {
		for _, s := range spans {
			if s.OperationName == op {
				return spans, s, true
			}
		}
	}
	return nil, jaegerSpan{}, false
}

// spansNamed are spans' spans named op, in the order they started.
func spansNamed(spans []jaegerSpan, op string) []jaegerSpan {
	var out []jaegerSpan
	for _, s := range spans {
		if s.OperationName == op {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b jaegerSpan) int { return cmp.Compare(a.StartTime, b.StartTime) })
	return out
}

// The traces acceptance of issue 46, against a real Jaeger: the code-review
// example and a two-agent sdk workflow on the scripted model each make one
// trace per kickoff, with the workflow, agent, chat and tool spans, their
// parent links, token counts and a sandbox refusal event. With the
// collector stopped the same runs finish.
func TestE2ETracesInJaeger(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	j := startJaeger(t)
	m := startModel(t, false,
		modelTurn{"Tools": []any{map[string]any{"Name": "run_shell", "Args": map[string]any{"command": "echo no > /etc/aw-trace-denied"}}}, "InputTokens": 100, "OutputTokens": 10},
		modelTurn{"Tools": []any{map[string]any{"Name": "channel_send", "Args": map[string]any{"message": "@reviewer please review"}}}, "InputTokens": 150, "OutputTokens": 20},
		modelTurn{"Text": "writer done", "InputTokens": 200, "OutputTokens": 5},
		// The same again, for the runs with the collector stopped.
		modelTurn{"Tools": []any{map[string]any{"Name": "run_shell", "Args": map[string]any{"command": "echo no > /etc/aw-trace-denied"}}}},
		modelTurn{"Tools": []any{map[string]any{"Name": "channel_send", "Args": map[string]any{"message": "@reviewer please review"}}}},
		modelTurn{"Text": "writer done"})
	c := newCLI(t)
	const service = "aw-jaeger-e2e"
	c.fixedEnv = append(c.env(), "OTEL_EXPORTER_OTLP_ENDPOINT="+j.OTLP, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_SERVICE_NAME="+service)
	pair := filepath.Join(t.TempDir(), "pair.yaml")
	writeFile(t, pair, `name: pair
agents:
  writer:
    backend: sdk
    model: qwen2.5-coder
    provider: {name: vllm, base_url: `+m.URL+`/v1}
    tools: [shell]
  reviewer:
    backend: mock
    config: {script: [{result: reviewed}]}
kickoff: "@writer write it, then ask the reviewer" # the writer's mention alone wakes the reviewer
`)
	review, err := filepath.Abs("../../examples/code-review/review.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reviewed := func(scope string) func() bool {
		return func() bool { return strings.Contains(c.ok("peek", scope), "[reviewer] reviewed") }
	}
	started := time.Now()
	c.ok("start", pair, "--background")
	c.ok("start", review, "--background")
	c.waitFor("the pair's review", reviewed("@pair"))
	c.waitFor("the code review's approval", func() bool { return strings.Contains(c.ok("peek", "@code-review"), "[reviewer] @coder approved") })
	traced := time.Since(started)

	var traces map[string][]jaegerSpan
	c.waitFor("both kickoffs' spans in Jaeger", func() bool {
		traces = j.traces(t, service)
		has := func(spans []jaegerSpan, ops ...string) bool {
			for _, op := range ops {
				if len(spansNamed(spans, op)) == 0 {
					return false
				}
			}
			return true
		}
		pair, _, _ := traceWith(traces, "invoke_workflow pair")
		review, _, _ := traceWith(traces, "invoke_workflow code-review")
		return has(pair, "invoke_agent writer", "execute_tool run_shell", "execute_tool channel_send", "invoke_agent reviewer") &&
			len(spansNamed(pair, "chat qwen2.5-coder")) == 3 &&
			has(review, "invoke_agent coder", "execute_tool team_doc_write", "invoke_agent reviewer")
	})

	t.Run("the sdk pair is one trace", func(t *testing.T) {
		spans, wf, _ := traceWith(traces, "invoke_workflow pair")

		one := func(op string) jaegerSpan {
			t.Helper()
			got := spansNamed(spans, op)
			if len(got) == 0 {
				t.Fatalf("the pair's trace has no %q span", op)
			}
			return got[0]
		}
		writer := one("invoke_agent writer")
		if writer.parent() != wf.SpanID {
			t.Errorf("invoke_agent writer is not the child of invoke_workflow pair")
		}
		chats := spansNamed(spans, "chat qwen2.5-coder")
		want := [][2]string{{"100", "10"}, {"150", "20"}, {"200", "5"}}
		for i, ch := range chats {
			if ch.parent() != writer.SpanID {
				t.Errorf("chat %d is not the child of the writer's run", i)
			}
			if i < len(want) && (ch.tag("gen_ai.usage.input_tokens") != want[i][0] || ch.tag("gen_ai.usage.output_tokens") != want[i][1]) {
				t.Errorf("chat %d tokens = %s in, %s out; want %s, %s", i, ch.tag("gen_ai.usage.input_tokens"), ch.tag("gen_ai.usage.output_tokens"), want[i][0], want[i][1])
			}
		}
		var shell jaegerSpan
		for _, s := range spansNamed(spans, "execute_tool run_shell") {
			shell = s
		}
		if shell.SpanID == "" || shell.parent() != writer.SpanID {
			t.Fatalf("no execute_tool run_shell span under the writer's run")
		}
		if ev := strings.Join(shell.events(), "\n"); !strings.Contains(ev, "sandbox") {
			t.Errorf("the refused shell command's span has no sandbox refusal event: %q", ev)
		}
		sends := spansNamed(spans, "execute_tool channel_send")
		if len(sends) == 0 {
			t.Fatal("no execute_tool channel_send span in the pair's trace")
		}
		// The reviewer's run, woken by the writer's mention, is the child
		// of the channel_send that made it.
		linked := false
		for _, r := range spansNamed(spans, "invoke_agent reviewer") {
			for _, s := range sends {
				linked = linked || r.parent() == s.SpanID
			}
		}
		if !linked {
			t.Errorf("the reviewer's run is not the child of the writer's channel_send that mentioned it")
		}
		if writer.tag("gen_ai.usage.input_tokens") != "450" {
			t.Errorf("the writer's run counts %s input tokens; want 450, its chats' sum", writer.tag("gen_ai.usage.input_tokens"))
		}
	})

	t.Run("the code review is a trace of its own", func(t *testing.T) {
		spans, wf, _ := traceWith(traces, "invoke_workflow code-review")
		if pairSpans, _, _ := traceWith(traces, "invoke_workflow pair"); pairSpans[0].TraceID == wf.TraceID {
			t.Fatal("the two kickoffs share one trace")
		}
		coder := spansNamed(spans, "invoke_agent coder")
		doc := spansNamed(spans, "execute_tool team_doc_write")
		reviewer := spansNamed(spans, "invoke_agent reviewer")
		if len(coder) == 0 || len(doc) == 0 || len(reviewer) == 0 {
			t.Fatalf("the code review's trace lacks a span: %d coder runs, %d team_doc_write, %d reviewer runs", len(coder), len(doc), len(reviewer))
		}
		if coder[0].parent() != wf.SpanID || doc[0].parent() != coder[0].SpanID {
			t.Errorf("coder's run and its team_doc_write are not children of the kickoff and the run")
		}
	})

	// The collector stopped: the same runs finish.
	j.stop()
	started = time.Now()
	c.ok("start", pair, "--tag", "dark", "--background")
	c.waitFor("the pair's review with the collector stopped", reviewed("@pair:dark"))
	t.Logf("kickoff to review: %s with Jaeger up (both workflows), %s with it stopped (the pair)", traced.Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
}
