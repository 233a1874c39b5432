package direct_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/plugins/direct"
	"github.com/agent-worker/agent-worker/plugins/internal/fakemodel"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/plugin/plugintest"
	"github.com/agent-worker/agent-worker/sdk/sandbox"
	sdktools "github.com/agent-worker/agent-worker/sdk/tools"
)

// stdioServerEnv makes the test binary an MCP server on stdio with one
// tool, echo, for the tests of an agent's own servers.
const stdioServerEnv = "DIRECT_TEST_STDIO_SERVER"

func TestMain(m *testing.M) {
	if raw, ok := os.LookupEnv(direct.ConfinedEnv); ok {
		os.Exit(direct.ConfinedWorkspace(raw)) // a process of its own
	}
	if os.Getenv(stdioServerEnv) != "" {
		if err := echoServer("local").Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// echoServer is an MCP server whose echo tool answers "<name>: <text>".
func echoServer(name string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	type in struct {
		Text string `json:"text" jsonschema:"what to echo"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ": " + in.Text}}}, nil, nil
		})
	return srv
}

// env is what a test backend sees as its environment: keys, and both APIs
// pointed at fm.
func env(fm *fakemodel.Server) map[string]string {
	return map[string]string{
		"ANTHROPIC_API_KEY": "ant-key", "ANTHROPIC_BASE_URL": fm.URL,
		"OPENAI_API_KEY": "oai-key", "OPENAI_BASE_URL": fm.URL + "/v1",
	}
}

func newBackend(vars map[string]string) *direct.Backend {
	return direct.New(direct.Options{Env: func(k string) string { return vars[k] }})
}

// configure sets the agent's model and config.
func configure(req backend.Request, model string, cfg map[string]any) backend.Request {
	req.Agent.Model = model
	req.Agent.Config, _ = json.Marshal(cfg)
	return req
}

func run(t *testing.T, b backend.Backend, req backend.Request) ([]backend.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	rec := &backendtest.Recorder{}
	err := b.Run(ctx, req, rec)
	return rec.Events(), err
}

func ofKind(events []backend.Event, k backend.EventKind) []backend.Event {
	var out []backend.Event
	for _, e := range events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func text(events []backend.Event) string {
	var b strings.Builder
	for _, e := range ofKind(events, backend.EventText) {
		b.WriteString(e.Text)
	}
	return b.String()
}

func resultOf(t *testing.T, events []backend.Event) string {
	t.Helper()
	rs := ofKind(events, backend.EventResult)
	if len(rs) != 1 {
		t.Fatalf("the run sent %d result events, want 1: %+v", len(rs), events)
	}
	return rs[0].Text
}

// hangingServer is a model API that never answers, until the request is
// cancelled.
func hangingServer(t *testing.T) *httptest.Server {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() {
		close(done)
		srv.Close()
	})
	return srv
}

func conformance(t *testing.T, wrap func(*testing.T, backend.Backend) backend.Backend) {
	backendtest.Run(t,
		func(t *testing.T) backend.Backend { return wrap(t, newBackend(env(fakemodel.New(t)))) },
		backendtest.WithRequest(func(r backend.Request) backend.Request {
			return configure(r, "anthropic/claude-sonnet-4-5", nil)
		}),
		backendtest.WithHangingRequest(func(r backend.Request) backend.Request {
			// The agent's env beats the process's: its model never answers.
			return configure(r, r.Agent.Model, map[string]any{"env": map[string]string{"ANTHROPIC_BASE_URL": hangingServer(t).URL}})
		}),
		backendtest.WithTimeout(20*time.Second),
	)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	conformance(t, func(_ *testing.T, b backend.Backend) backend.Backend { return b })
}

func TestConformanceOverGRPC(t *testing.T) {
	t.Parallel()
	conformance(t, func(t *testing.T, b backend.Backend) backend.Backend { return plugintest.Backend(t, b) })
}

func TestAgentWorksWithTheTeamThroughTools(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Post("user", "@alice please write the plan and tell @bob")
	fm := fakemodel.New(t,
		fakemodel.Turn{Tools: []fakemodel.ToolCall{{Name: "my_inbox"}}},
		fakemodel.Turn{Text: "Writing the plan.", Tools: []fakemodel.ToolCall{
			{Name: "team_doc_write", Args: map[string]any{"file": "plan.md", "content": "# Plan\n"}},
			{Name: "channel_send", Args: map[string]any{"message": "@bob the plan is in plan.md"}},
		}},
		fakemodel.Turn{Text: "All done."},
	)
	req := configure(d.Request("alice"), "anthropic/claude-sonnet-4-5", nil)
	req.Agent.System = "You are alice, the planner."
	events, err := run(t, newBackend(env(fm)), req)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}

	if doc, ok := d.Document("plan.md"); doc != "# Plan\n" {
		t.Errorf("plan.md = %q (exists %v), want the document the model wrote", doc, ok)
	}
	msgs := d.Messages()
	if last := msgs[len(msgs)-1]; last.From != "alice" || last.Content != "@bob the plan is in plan.md" || !slices.Equal(last.Mentions, []string{"bob"}) {
		t.Errorf("last channel message = %+v, want alice's mention of bob", last)
	}
	if got := resultOf(t, events); got != "All done." {
		t.Errorf("result = %q, want the model's last text", got)
	}
	if got := text(events); !strings.Contains(got, "Writing the plan.") || !strings.Contains(got, "All done.") {
		t.Errorf("streamed text = %q, want both turns' text", got)
	}
	var calls []string
	for _, e := range ofKind(events, backend.EventToolResult) {
		calls = append(calls, e.Tool.Name)
		if e.Tool.IsError {
			t.Errorf("tool %s failed: %s", e.Tool.Name, e.Tool.Result)
		}
	}
	if want := []string{"my_inbox", "team_doc_write", "channel_send"}; !slices.Equal(calls, want) {
		t.Errorf("tool results = %v, want %v", calls, want)
	}

	reqs := fm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests, want 3", len(reqs))
	}
	first := reqs[0]
	if got := first.Header.Get("X-Api-Key"); got != "ant-key" {
		t.Errorf("X-Api-Key = %q, want ANTHROPIC_API_KEY's value", got)
	}
	if first.Body["model"] != "claude-sonnet-4-5" || first.Body["stream"] != true {
		t.Errorf("request model %v, stream %v; want claude-sonnet-4-5, streamed", first.Body["model"], first.Body["stream"])
	}
	if sys := fmt.Sprint(first.Body["system"]); !strings.Contains(sys, req.Agent.System) {
		t.Errorf("system = %s, want the agent's system prompt", sys)
	}
	if prompt := fmt.Sprint(first.Body["messages"]); !strings.Contains(prompt, "please write the plan") || !strings.Contains(prompt, "## Inbox") {
		t.Errorf("first user message = %s, want the worker's prompt with the inbox", prompt)
	}
	if tools := toolNames(first.Body); !isSubset([]string{"my_inbox", "channel_send", "team_doc_write", "team_proposal_create"}, tools) {
		t.Errorf("tools offered = %v, want the daemon's tools", tools)
	}
	checkSendSchema(t, first.Body)
	if got := toolResults(reqs[1].Body)["toolu_1"]; !strings.Contains(got, "please write the plan") {
		t.Errorf("my_inbox result sent back = %q, want the inbox's messages", got)
	}
	if got := toolResults(reqs[2].Body); !strings.Contains(got["toolu_1"], "plan.md") || !strings.Contains(got["toolu_2"], "sent as") {
		t.Errorf("results sent back after the second turn = %v, want team_doc_write's and channel_send's", got)
	}
}

func isSubset(want, have []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// toolNames are the tools a request offered, in either API.
func toolNames(body map[string]any) []string {
	var names []string
	for name := range tools(body) {
		names = append(names, name)
	}
	return names
}

// tools are the input schemas of the tools a request offered, by name, in
// either API.
func tools(body map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	list, _ := body["tools"].([]any)
	for _, t := range list {
		m, _ := t.(map[string]any)
		if fn, ok := m["function"].(map[string]any); ok {
			m = fn
		}
		schema, _ := m["input_schema"].(map[string]any)
		if schema == nil {
			schema, _ = m["parameters"].(map[string]any)
		}
		out[fmt.Sprint(m["name"])] = schema
	}
	return out
}

// checkSendSchema fails unless channel_send was offered with the daemon's
// schema: an object with a required message.
func checkSendSchema(t *testing.T, body map[string]any) {
	t.Helper()
	s := tools(body)["channel_send"]
	props, _ := s["properties"].(map[string]any)
	if s["type"] != "object" || props["message"] == nil || !slices.Contains(required(s), "message") {
		t.Errorf("channel_send schema = %v, want an object with a required message", s)
	}
}

// toolResults are the tool results a request sent back, by call id, in
// either API.
func toolResults(body map[string]any) map[string]string {
	out := map[string]string{}
	msgs, _ := body["messages"].([]any)
	for _, msg := range msgs {
		m, _ := msg.(map[string]any)
		if m["role"] == "tool" {
			out[fmt.Sprint(m["tool_call_id"])] = fmt.Sprint(m["content"])
			continue
		}
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			if b, _ := b.(map[string]any); b["type"] == "tool_result" {
				out[fmt.Sprint(b["tool_use_id"])] = fmt.Sprint(b["content"])
			}
		}
	}
	return out
}

func TestUsageAndCost(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		model    string
		cfg      map[string]any
		wantIn   int64
		wantOut  int64
		wantCost float64
	}{
		// two turns of 1000+2000 input and 100+50 output tokens at $3/$15
		"built-in price": {model: "anthropic/claude-sonnet-4-5-20250929", wantIn: 3000, wantOut: 150, wantCost: 0.01125},
		"config price": {model: "openai/my-model", wantIn: 3000, wantOut: 150, wantCost: 0.0033,
			cfg: map[string]any{"prices": map[string]any{"my-model": map[string]float64{"input": 1, "output": 2}}}},
		"unknown model": {model: "openai/my-model", wantIn: 3000, wantOut: 150, wantCost: 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			fm := fakemodel.New(t,
				fakemodel.Turn{Tools: []fakemodel.ToolCall{{Name: "team_members"}}, InputTokens: 1000, OutputTokens: 100},
				fakemodel.Turn{Text: "ok", InputTokens: 2000, OutputTokens: 50},
			)
			events, err := run(t, newBackend(env(fm)), configure(d.Request("alice"), tc.model, tc.cfg))
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			usage := ofKind(events, backend.EventUsage)
			if len(usage) != 2 {
				t.Fatalf("%d usage events, want one per turn", len(usage))
			}
			if first := usage[0].Usage; first.InputTokens != 1000 || first.OutputTokens != 100 {
				t.Errorf("first usage = %+v, want the first turn's tokens", first)
			}
			// Each usage event ends one model call, with its own tokens,
			// why the model stopped and when: the daemon's chat span.
			stops := map[string][2]string{"anthropic": {"tool_use", "end_turn"}, "openai": {"tool_calls", "stop"}}[strings.Split(tc.model, "/")[0]]
			for i, want := range []struct{ in, out int64 }{{1000, 100}, {2000, 50}} {
				c := usage[i].Usage.Call
				if c == nil {
					t.Fatalf("usage event %d has no model call", i)
				}
				if c.InputTokens != want.in || c.OutputTokens != want.out || c.Model != strings.Split(tc.model, "/")[1] || c.ResponseModel != "fake" ||
					!slices.Equal(c.FinishReasons, []string{stops[i]}) || c.Start.IsZero() || c.End.Before(c.Start) {
					t.Errorf("call %d = %+v, want %d in, %d out, model %s answered by fake, finish %s, start <= end", i, *c, want.in, want.out, tc.model, stops[i])
				}
			}
			u := usage[1].Usage
			if u.InputTokens != tc.wantIn || u.OutputTokens != tc.wantOut || math.Abs(u.CostUSD-tc.wantCost) > 1e-9 {
				t.Errorf("last usage = %+v, want the run's totals %d in, %d out, $%g", *u, tc.wantIn, tc.wantOut, tc.wantCost)
			}
		})
	}
}

func TestRateLimitIsRetriedAfterRetryAfter(t *testing.T) {
	t.Parallel()
	for _, model := range []string{"anthropic/claude-haiku-4-5", "openai/gpt-4o-mini"} {
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			fm := fakemodel.New(t, fakemodel.Turn{Status: http.StatusTooManyRequests, RetryAfter: 1}, fakemodel.Turn{Text: "made it"})
			begin := time.Now()
			events, err := run(t, newBackend(env(fm)), configure(d.Request("alice"), model, nil))
			if err != nil {
				t.Fatalf("Run after a 429 = %v, want the retry to succeed", err)
			}
			if got := resultOf(t, events); got != "made it" {
				t.Errorf("result = %q, want the retried answer", got)
			}
			if n := len(fm.Requests()); n != 2 {
				t.Errorf("the model got %d requests, want 2", n)
			}
			// The SDKs' own first backoff is under a second: waiting a
			// second shows retry-after was read.
			if took := time.Since(begin); took < 950*time.Millisecond {
				t.Errorf("the retry came after %v, before retry-after's 1 s", took)
			}
		})
	}
}

func TestMissingKeyFailsAtOnce(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		model   string
		cfg     map[string]any
		wantVar string
	}{
		"anthropic":     {model: "anthropic/claude-sonnet-4-5", wantVar: "ANTHROPIC_API_KEY"},
		"openai":        {model: "openai/gpt-4o", wantVar: "OPENAI_API_KEY"},
		"bare claude":   {model: "claude-sonnet-4-5", wantVar: "ANTHROPIC_API_KEY"},
		"known service": {model: "deepseek/deepseek-chat", wantVar: "DEEPSEEK_API_KEY"},
		"provider": {model: "qwen3", wantVar: "MY_LLM_KEY",
			cfg: map[string]any{"provider": map[string]string{"name": "my-llm", "base_url": "http://127.0.0.1:1/v1", "api_key_env": "MY_LLM_KEY"}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			fm := fakemodel.New(t)
			vars := env(fm)
			delete(vars, "ANTHROPIC_API_KEY")
			delete(vars, "OPENAI_API_KEY")
			_, err := run(t, newBackend(vars), configure(d.Request("alice"), tc.model, tc.cfg))
			if err == nil || !backend.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantVar) {
				t.Fatalf("Run without a key = %v (permanent %v), want a permanent error naming %s", err, backend.IsPermanent(err), tc.wantVar)
			}
			if n, calls := len(fm.Requests()), d.Calls(); n != 0 || len(calls) != 0 {
				t.Errorf("%d model requests and daemon calls %v before failing, want none", n, calls)
			}
		})
	}
}

func TestOpenAICompatibleEndpoints(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		model     string
		provider  map[string]string
		vars      map[string]string
		wantModel string
		wantAuth  string
		wantPath  string
	}{
		"openai": {model: "openai/gpt-4o-mini", wantModel: "gpt-4o-mini", wantAuth: "Bearer oai-key", wantPath: "/v1/chat/completions"},
		"provider with key": {model: "local/qwen3:8b", wantModel: "qwen3:8b", wantAuth: "Bearer local-key", wantPath: "/v1/chat/completions",
			provider: map[string]string{"name": "local", "base_url": "{url}/v1", "api_key_env": "LOCAL_KEY"}, vars: map[string]string{"LOCAL_KEY": "local-key"}},
		"provider without key": {model: "llama3.2", wantModel: "llama3.2", wantPath: "/api/v1/chat/completions",
			provider: map[string]string{"name": "ollama", "base_url": "{url}/api/v1"}},
		"known service": {model: "deepseek/deepseek-chat", wantModel: "deepseek-chat", wantAuth: "Bearer ds-key", wantPath: "/ds/chat/completions",
			vars: map[string]string{"DEEPSEEK_API_KEY": "ds-key", "DEEPSEEK_BASE_URL": "{url}/ds"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			d.Post("user", "@alice say hi")
			fm := fakemodel.New(t,
				fakemodel.Turn{Text: "Saying hi.", Tools: []fakemodel.ToolCall{{Name: "channel_send", Args: map[string]any{"message": "hi"}}}},
				fakemodel.Turn{Text: "fine"})
			vars := env(fm)
			for k, v := range tc.vars {
				vars[k] = strings.ReplaceAll(v, "{url}", fm.URL)
			}
			cfg := map[string]any{}
			if tc.provider != nil {
				p := map[string]string{}
				for k, v := range tc.provider {
					p[k] = strings.ReplaceAll(v, "{url}", fm.URL)
				}
				cfg["provider"] = p
			}
			req := configure(d.Request("alice"), tc.model, cfg)
			req.Agent.System = "Be brief."
			events, err := run(t, newBackend(vars), req)
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			if got := resultOf(t, events); got != "fine" {
				t.Errorf("result = %q, want fine", got)
			}
			if msgs := d.Messages(); msgs[len(msgs)-1].Content != "hi" {
				t.Errorf("last message = %+v, want the model's channel_send", msgs[len(msgs)-1])
			}
			reqs := fm.Requests()
			if len(reqs) != 2 {
				t.Fatalf("the model got %d requests, want 2", len(reqs))
			}
			r := reqs[0]
			if r.Path != tc.wantPath || r.Body["model"] != tc.wantModel || r.Header.Get("Authorization") != tc.wantAuth {
				t.Errorf("request to %s, model %v, Authorization %q; want %s, %s, %q",
					r.Path, r.Body["model"], r.Header.Get("Authorization"), tc.wantPath, tc.wantModel, tc.wantAuth)
			}
			if msgs, _ := r.Body["messages"].([]any); len(msgs) != 2 || fmt.Sprint(msgs[0]) != "map[content:Be brief. role:system]" {
				t.Errorf("messages = %v, want the system prompt, then the prompt", r.Body["messages"])
			}
			if !slices.Contains(toolNames(r.Body), "channel_send") {
				t.Errorf("tools offered = %v, want the daemon's", toolNames(r.Body))
			}
			checkSendSchema(t, r.Body)
			if got := toolResults(reqs[1].Body)["call_1"]; !strings.Contains(got, "sent as") {
				t.Errorf("channel_send result sent back = %q", got)
			}
		})
	}
}

func TestMaxStepsStopsAModelThatKeepsCallingTools(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	var turns []fakemodel.Turn
	for range 5 {
		turns = append(turns, fakemodel.Turn{Tools: []fakemodel.ToolCall{{Name: "team_members"}}})
	}
	fm := fakemodel.New(t, turns...)
	events, err := run(t, newBackend(env(fm)), configure(d.Request("alice"), "openai/gpt-4o", map[string]any{"max_steps": 3}))
	if err != nil {
		t.Fatalf("Run = %v, want a normal end at max_steps", err)
	}
	if n := len(fm.Requests()); n != 3 {
		t.Errorf("the model got %d requests, want max_steps = 3", n)
	}
	if got := text(events); !strings.Contains(got, "max_steps=3") {
		t.Errorf("text = %q, want a warning about max_steps", got)
	}
	resultOf(t, events)
}

func TestTimeoutBoundsTheRunAndSilenceSendsHeartbeats(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	vars := env(fakemodel.New(t))
	vars["ANTHROPIC_BASE_URL"] = hangingServer(t).URL
	b := direct.New(direct.Options{Env: func(k string) string { return vars[k] }, Heartbeat: 50 * time.Millisecond})
	begin := time.Now()
	events, err := run(t, b, configure(d.Request("alice"), "anthropic/claude-sonnet-4-5", map[string]any{"timeout": "300ms"}))
	if err == nil || backend.IsPermanent(err) || !strings.Contains(err.Error(), "timeout of 300ms") {
		t.Errorf("Run against a silent model = %v, want a retryable error naming the timeout", err)
	}
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("the run took %v with a timeout of 300ms", took)
	}
	if len(ofKind(events, backend.EventHeartbeat)) == 0 {
		t.Errorf("no heartbeat while the model was silent for 300ms (heartbeat every 50ms): %+v", events)
	}
}

func TestOwnMCPServersAreOfferedAndCallable(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, via := range []string{"request", "config"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			remote := echoServer("remote")
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, nil)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Token") != "secret" {
					http.Error(w, "no token", http.StatusUnauthorized)
					return
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)

			d := backendtest.NewDaemon(t)
			fm := fakemodel.New(t,
				fakemodel.Turn{Tools: []fakemodel.ToolCall{
					{Name: "local__echo", Args: map[string]any{"text": "a"}},
					{Name: "remote__echo", Args: map[string]any{"text": "b"}},
				}},
				fakemodel.Turn{Text: "ok"})
			// GORACE: a -race binary otherwise sleeps a second as it exits.
			local := backend.MCPServer{Name: "local", Command: []string{exe}, Env: map[string]string{stdioServerEnv: "1", "GORACE": "atexit_sleep_ms=0"}}
			remoteCfg := backend.MCPServer{Name: "remote", URL: srv.URL, Headers: map[string]string{"X-Token": "secret"}}
			req := d.Request("alice")
			cfg := map[string]any{}
			if via == "request" {
				req.MCPServers = []backend.MCPServer{local, remoteCfg}
			} else {
				cfg["mcp_servers"] = map[string]any{
					"local":  map[string]any{"command": local.Command, "env": local.Env},
					"remote": map[string]any{"url": remoteCfg.URL, "headers": remoteCfg.Headers},
				}
			}
			events, err := run(t, newBackend(env(fm)), configure(req, "anthropic/claude-sonnet-4-5", cfg))
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			resultOf(t, events)
			reqs := fm.Requests()
			if len(reqs) != 2 {
				t.Fatalf("the model got %d requests, want 2", len(reqs))
			}
			if tools := toolNames(reqs[0].Body); !isSubset([]string{"local__echo", "remote__echo", "channel_send"}, tools) {
				t.Errorf("tools offered = %v, want the own servers' tools beside the daemon's", tools)
			}
			got := toolResults(reqs[1].Body)
			if !strings.Contains(got["toolu_1"], "local: a") || !strings.Contains(got["toolu_2"], "remote: b") {
				t.Errorf("results sent back = %v, want each server's echo", got)
			}
		})
	}
}

func TestBadConfigIsPermanent(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		model string
		cfg   map[string]any
		want  string
	}{
		"unknown provider": {model: "acme/model-1", want: "provider: {name, base_url, api_key_env}"},
		"no model":         {model: "", want: "no model"},
		"bad timeout":      {model: "openai/gpt-4o", cfg: map[string]any{"timeout": "soon"}, want: "timeout"},
		"provider without base_url": {model: "m", want: "base_url",
			cfg: map[string]any{"provider": map[string]string{"name": "mine"}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			_, err := run(t, newBackend(env(fakemodel.New(t))), configure(d.Request("alice"), tc.model, tc.cfg))
			if !backend.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run = %v, want a permanent error mentioning %q", err, tc.want)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Run timed out instead of failing at once")
			}
		})
	}
}

func required(schema map[string]any) []string {
	var out []string
	list, _ := schema["required"].([]any)
	for _, r := range list {
		out = append(out, fmt.Sprint(r))
	}
	return out
}

func TestWorkspaceToolsWriteThenRead(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	d.Post("user", "@alice write notes/hello.txt, then read it back")
	fm := fakemodel.New(t,
		fakemodel.Turn{Tools: []fakemodel.ToolCall{{Name: "write_file", Args: map[string]any{"path": "notes/hello.txt", "content": "hello from alice\n"}}}},
		fakemodel.Turn{Tools: []fakemodel.ToolCall{{Name: "read_file", Args: map[string]any{"path": "notes/hello.txt"}}}},
		fakemodel.Turn{Text: "It says hello."},
	)
	req := configure(d.Request("alice"), "anthropic/claude-sonnet-4-5", nil)
	if _, err := run(t, plugintest.Backend(t, newBackend(env(fm))), req); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if b, err := os.ReadFile(req.ProjectDir + "/notes/hello.txt"); err != nil || string(b) != "hello from alice\n" {
		t.Errorf("notes/hello.txt in the agent's directory = %q, %v; want what the model wrote", b, err)
	}
	reqs := fm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests, want 3", len(reqs))
	}
	if got := toolNames(reqs[0].Body); !isSubset([]string{"read_file", "write_file", "edit_file", "list_files", "search_files", "run_shell", "channel_send"}, got) {
		t.Errorf("tools offered = %v, want the workspace tools beside the daemon's", got)
	}
	if got := toolResults(reqs[2].Body)["toolu_1"]; !strings.Contains(got, "hello from alice\n") {
		t.Errorf("read_file result sent back = %q, want the file's content", got)
	}

	// tools: [read] offers only read_file; tools: [] none.
	for _, tc := range []struct {
		tools []string
		want  []string
	}{{[]string{"read"}, []string{"read_file"}}, {[]string{}, nil}} {
		fm := fakemodel.New(t, fakemodel.Turn{Text: "ok"})
		req := configure(d.Request("alice"), "anthropic/claude-sonnet-4-5", map[string]any{"tools": tc.tools})
		if _, err := run(t, newBackend(env(fm)), req); err != nil {
			t.Fatalf("Run with tools %v = %v", tc.tools, err)
		}
		var workspace []string
		for _, name := range toolNames(fm.Requests()[0].Body) {
			if strings.HasSuffix(name, "_file") || strings.HasSuffix(name, "_files") || name == "run_shell" {
				workspace = append(workspace, name)
			}
		}
		if !slices.Equal(workspace, tc.want) {
			t.Errorf("tools: %v offered workspace tools %v, want %v", tc.tools, workspace, tc.want)
		}
	}

	// An unknown name is the agent's mistake, not worth a retry.
	req = configure(d.Request("alice"), "anthropic/claude-sonnet-4-5", map[string]any{"tools": []string{"browse"}})
	if _, err := run(t, newBackend(env(fm)), req); !backend.IsPermanent(err) || !strings.Contains(err.Error(), `unknown tool "browse"`) {
		t.Errorf("Run with tools [browse] = %v, want a permanent error naming it", err)
	}
}

func TestConversationMemoryCarriesToTheNextRun(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	fm := fakemodel.New(t,
		fakemodel.Turn{Tools: []fakemodel.ToolCall{{Name: "write_file", Args: map[string]any{"path": "a.txt", "content": "apples"}}}},
		fakemodel.Turn{Text: "I wrote a.txt."},
		fakemodel.Turn{Text: "You asked me to write a.txt."},
	)
	b := newBackend(env(fm))

	d.Post("user", "@alice please write a.txt")
	events, err := run(t, b, configure(d.Request("alice"), "anthropic/claude-sonnet-4-5", nil))
	if err != nil {
		t.Fatalf("first run = %v", err)
	}
	sessions := ofKind(events, backend.EventSession)
	if len(sessions) != 1 {
		t.Fatalf("the first run sent %d session events, want its memory once", len(sessions))
	}
	d.Post("user", "@alice what did I ask you before?")
	req := configure(d.Request("alice"), "anthropic/claude-sonnet-4-5", nil)
	req.ResumeSession = sessions[0].SessionID
	events, err = run(t, b, req)
	if err != nil {
		t.Fatalf("second run = %v", err)
	}

	msgs, _ := fm.Requests()[2].Body["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("the second run sent %d messages, want the first exchange (2) and its own prompt", len(msgs))
	}
	role := func(i int) any { return msgs[i].(map[string]any)["role"] }
	first, answer, now := fmt.Sprint(msgs[0]), fmt.Sprint(msgs[1]), fmt.Sprint(msgs[2])
	if role(0) != "user" || !strings.Contains(first, "please write a.txt") || strings.Contains(first, "what did I ask") {
		t.Errorf("first message = %s, want the first run's inbox", first)
	}
	if role(1) != "assistant" || !strings.Contains(answer, "wrote 6 bytes to a.txt") || !strings.Contains(answer, "I wrote a.txt.") {
		t.Errorf("second message = %s, want the first run's tool result and answer", answer)
	}
	if role(2) != "user" || !strings.Contains(now, "what did I ask you before?") {
		t.Errorf("last message = %s, want this run's prompt", now)
	}
	if s := ofKind(events, backend.EventSession); len(s) != 1 || !strings.Contains(s[0].SessionID, "please write a.txt") || !strings.Contains(s[0].SessionID, "what did I ask") {
		t.Errorf("second run's memory = %v, want both exchanges", s)
	}

	// memory_tokens: 0 neither sends nor keeps a memory.
	d.Post("user", "@alice and now?")
	req = configure(d.Request("alice"), "anthropic/claude-sonnet-4-5", map[string]any{"memory_tokens": 0})
	req.ResumeSession = sessions[0].SessionID
	events, err = run(t, b, req)
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _ := fm.Requests()[3].Body["messages"].([]any); len(msgs) != 1 || len(ofKind(events, backend.EventSession)) != 0 {
		t.Errorf("with memory_tokens 0: %d messages sent, %d session events; want 1 and none", len(msgs), len(ofKind(events, backend.EventSession)))
	}
}

// A confined run's shell command has the tool network, not the plugin's:
// the model still answers, the command cannot reach the port the plugin
// may, and the model reads why after the command's output while the
// transcript gets a sandbox event. Only the command is confined
// (sandbox.RunTool): the backend runs in the test process, never behind
// the sdk's server, which would confine the whole process.
func TestShellCommandGetsTheToolNetwork(t *testing.T) {
	t.Parallel()
	if st := sandbox.Probe(); !st.Available() || st.ABI < 4 {
		t.Skipf("no TCP sandbox here: %s", st)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("bash, for /dev/tcp, is not installed: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	port := uint16(l.Addr().(*net.TCPAddr).Port)

	d := backendtest.NewDaemon(t)
	d.Post("user", "@alice is the port open?")
	command := fmt.Sprintf("%s -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo connected'", bash, port)
	fm := fakemodel.New(t,
		fakemodel.Turn{Tools: []fakemodel.ToolCall{{Name: "run_shell", Args: map[string]any{"command": command}}}},
		fakemodel.Turn{Text: "It is closed to me."},
	)
	req := configure(d.Request("alice"), "anthropic/claude-sonnet-4-5", nil)
	req.Sandbox = sandbox.Policy{Read: []string{"/usr", "/bin", "/lib", "/lib64", "/etc", "/proc", "/dev/urandom"},
		Write: []string{req.ProjectDir, "/dev/null"}, Net: sandbox.Net{Ports: []uint16{port}}}
	events, err := run(t, newBackend(env(fm)), req)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	refused := ofKind(events, backend.EventSandbox)
	what := fmt.Sprintf("TCP port %d is outside the agent's sandbox", port)
	if len(refused) != 1 || !strings.HasPrefix(refused[0].Text, what) {
		t.Fatalf("sandbox events = %+v, want one saying %q", refused, what)
	}
	reqs := fm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	got := toolResults(reqs[1].Body)["toolu_1"]
	if want := "[exit status 1]\nsandbox: " + refused[0].Text; strings.Contains(got, "connected") || !strings.Contains(got, want) {
		t.Errorf("run_shell result sent back = %q, want the refusal, then %q", got, want)
	}
}

// recordGate makes d's gate answer with decide, keeping what it was asked:
// the function it returns reads the calls so far.
func recordGate(d *backendtest.Daemon, decide func(sdktools.GateCall) sdktools.GateDecision) func() []sdktools.GateCall {
	var mu sync.Mutex // guards asked
	var asked []sdktools.GateCall
	d.Gate = func(agent string, call sdktools.GateCall) sdktools.GateDecision {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, call)
		return decide(call)
	}
	return func() []sdktools.GateCall {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
}

// Each workspace tool is put to the daemon's gate first: a refused call
// does not run, the model reads the phase's reason as the tool's error,
// and the transcript gets a gate event; a shell command that ran carries
// its exit status.
func TestWorkspaceToolsAskTheGate(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	const reason = "phase plan of skill implement does not allow write_file: write_file is denied by \"write_file\""
	asked := recordGate(d, func(call sdktools.GateCall) sdktools.GateDecision {
		if call.Tool == "write_file" {
			return sdktools.GateDecision{Reason: reason}
		}
		return sdktools.GateDecision{Allowed: true}
	})
	d.Post("user", "@alice plan it")
	fm := fakemodel.New(t,
		fakemodel.Turn{Tools: []fakemodel.ToolCall{{Name: "write_file", Args: map[string]any{"path": "main.go", "content": "package main\n"}}}},
		fakemodel.Turn{Tools: []fakemodel.ToolCall{{Name: "run_shell", Args: map[string]any{"command": "exit 3"}}}},
		fakemodel.Turn{Text: "Planned."},
	)
	req := configure(d.Request("alice"), "anthropic/claude-sonnet-4-5", nil)
	events, err := run(t, plugintest.Backend(t, newBackend(env(fm))), req)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if _, err := os.Stat(filepath.Join(req.ProjectDir, "main.go")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("main.go after a refused write_file: %v, want it not written", err)
	}
	if got := toolResults(fm.Requests()[1].Body)["toolu_1"]; !strings.Contains(got, reason) {
		t.Errorf("write_file result the model read = %q, want the phase's reason", got)
	}
	if g := ofKind(events, backend.EventGate); len(g) != 1 || g[0].Text != reason {
		t.Errorf("gate events = %+v, want one with the reason", g)
	}
	want := []sdktools.GateCall{{Tool: "write_file", Path: filepath.Join(req.ProjectDir, "main.go")}, {Tool: "run_shell", Command: "exit 3"}}
	if diff := cmp.Diff(want, asked()); diff != "" {
		t.Errorf("gate asked (-want +got):\n%s", diff)
	}
	var exit *int
	for _, e := range ofKind(events, backend.EventToolResult) {
		if e.Tool.Name == "run_shell" {
			exit = e.Tool.Exit
		}
	}
	if exit == nil || *exit != 3 {
		t.Errorf("run_shell result's exit = %v, want 3", exit)
	}
}

// A run with repositories is told them in its prompt and works in them
// through the tools' repo argument: a write lands in the writable one,
// with the gate asked about the path there, and the read-only one is
// refused by the tool itself.
func TestWorkspaceToolsWorkInRepos(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	asked := recordGate(d, func(sdktools.GateCall) sdktools.GateDecision { return sdktools.GateDecision{Allowed: true} })
	d.Post("user", "@alice fix app, leave lib alone")
	fm := fakemodel.New(t,
		fakemodel.Turn{Tools: []fakemodel.ToolCall{
			{ID: "app", Name: "write_file", Args: map[string]any{"repo": "app", "path": "fix.go", "content": "package app\n"}},
			{ID: "lib", Name: "write_file", Args: map[string]any{"repo": "lib", "path": "fix.go", "content": "package lib\n"}},
		}},
		fakemodel.Turn{Text: "Fixed app."},
	)
	req := configure(d.Request("alice"), "anthropic/claude-sonnet-4-5", nil)
	lib, app := t.TempDir(), t.TempDir()
	req.Repos = []backend.Repo{{Name: "lib", Path: lib}, {Name: "app", Path: app, Write: true}}
	if _, err := run(t, plugintest.Backend(t, newBackend(env(fm))), req); err != nil {
		t.Fatalf("Run = %v", err)
	}
	reqs := fm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	prompt := fmt.Sprint(reqs[0].Body["messages"])
	for _, want := range []string{"- lib: " + lib + " (read-only)", "- app: " + app + " (writable)"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, prompt)
		}
	}
	if props, _ := tools(reqs[0].Body)["write_file"]["properties"].(map[string]any); props["repo"] == nil {
		t.Errorf("write_file's schema = %v, want a repo argument", tools(reqs[0].Body)["write_file"])
	}
	if b, err := os.ReadFile(filepath.Join(app, "fix.go")); err != nil || string(b) != "package app\n" {
		t.Errorf("app/fix.go = %q, %v; want what the model wrote", b, err)
	}
	if _, err := os.Stat(filepath.Join(lib, "fix.go")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lib/fix.go after a write to the read-only repository: %v, want it not written", err)
	}
	results := toolResults(reqs[1].Body)
	if got := results["lib"]; !strings.Contains(got, "repository lib is read-only in this workspace") {
		t.Errorf("write_file in lib = %q, want it refused as read-only", got)
	}
	if got := asked(); len(got) == 0 || got[0] != (sdktools.GateCall{Tool: "write_file", Path: filepath.Join(app, "fix.go")}) {
		t.Errorf("gate asked %+v, want write_file with the path in app first", got)
	}
}
