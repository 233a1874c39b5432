package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/store"
)

// startClaudeDaemon starts a daemon whose claude runs talk to model (a
// fakemodel server) and never to the network or the user's settings: the
// home is the test's, and so is HOME.
func (c *cli) startClaudeDaemon(model string) *exec.Cmd {
	c.t.Helper()
	cmd := exec.Command(binary, "daemon")
	cmd.Env = append(c.env(), "ANTHROPIC_BASE_URL="+model, "ANTHROPIC_API_KEY=x", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	var logs lockedBuffer // the daemon writes while a failing test reads
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.t.Logf("daemon log:\n%s", logs.String())
		}
	})
	c.waitFor("daemon.json of pid "+strconv.Itoa(cmd.Process.Pid), func() bool {
		d, err := api.ReadDaemonInfo(c.home)
		return err == nil && d.PID == cmd.Process.Pid
	})
	return cmd
}

// sessionOf returns the session id a run reported, from its transcript.
func (c *cli) sessionOf(runID string) string {
	c.t.Helper()
	d, err := c.client().GetRun(context.Background(), runID)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, e := range d.Events {
		var s struct {
			SessionID string `json:"session_id"`
		}
		if e.Kind == "session" && json.Unmarshal(e.Data, &s) == nil {
			return s.SessionID
		}
	}
	return ""
}

// requestWith finds the model request whose body holds every mark.
func requestWith(reqs []modelRequest, marks ...string) (modelRequest, bool) {
	for _, r := range reqs {
		ok := true
		for _, m := range marks {
			ok = ok && bytes.Contains(r.RawBody, []byte(m))
		}
		if ok {
			return r, true
		}
	}
	return modelRequest{}, false
}

// roleBlock is one content block of a request's messages, with the role
// of the message it is in.
type roleBlock struct {
	role  any
	block map[string]any
}

// contentBlocks are the content blocks of r's messages, in order.
func contentBlocks(r modelRequest) []roleBlock {
	var out []roleBlock
	msgs, _ := r.Body["messages"].([]any)
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			if block, ok := b.(map[string]any); ok {
				out = append(out, roleBlock{msg["role"], block})
			}
		}
	}
	return out
}

// toolResult is the text a request sends back as the result of tool
// call id.
func toolResult(r modelRequest, id string) string {
	for _, rb := range contentBlocks(r) {
		block := rb.block
		if block["type"] != "tool_result" || block["tool_use_id"] != id {
			continue
		}
		switch c := block["content"].(type) {
		case string:
			return c
		case []any: // text blocks
			var parts []string
			for _, p := range c {
				if p, ok := p.(map[string]any); ok {
					s, _ := p["text"].(string)
					parts = append(parts, s)
				}
			}
			return strings.Join(parts, "\n")
		}
	}
	return ""
}

// replaysToolCall reports whether a request sends back, as conversation
// history, an assistant turn that called tool: only a resumed session
// does (the prompt's recent activity shows channel messages, not calls).
func replaysToolCall(r modelRequest, tool string) bool {
	for _, rb := range contentBlocks(r) {
		if rb.role == "assistant" && rb.block["type"] == "tool_use" && rb.block["name"] == tool {
			return true
		}
	}
	return false
}

// The real Claude Code, offline against a scripted model: a message to
// alice makes claude call the daemon's channel_send through the MCP config
// the backend wrote, the daemon acks her inbox, and her next run resumes
// the same conversation.
func TestE2EClaudeRealCLI(t *testing.T) {
	t.Parallel()
	realCLI(t, "claude")
	model := startModel(t, false,
		modelTurn{"Tools": []any{map[string]any{"Name": "mcp__agent-worker__channel_send", "Args": map[string]any{"message": "hello from claude"}}}},
		modelTurn{"Text": "first run done"})
	c := newCLI(t)
	c.startClaudeDaemon(model.URL)
	// Every run below is confined (issue 26): the real CLI works inside.
	if !sandboxOn(c) {
		t.Errorf("the daemon does not confine runs:\n%s", c.ok("status"))
	}
	if out := c.ok("backends", "--wide"); !strings.Contains(out, "claude 2.1.197 (Claude Code) at ") {
		t.Errorf("backends does not show claude's version:\n%s", out)
	}

	c.ok("new", "alice", "--backend", "claude", "--model", "anthropic/claude-sonnet-4-5", "--system", "You are terse. SYSTEM-MARK-42")
	c.ok("send", "alice", "please greet the team PROMPT-MARK-1")
	c.waitFor("alice's message in the channel", func() bool { return strings.Contains(c.ok("peek"), "[alice] hello from claude") })
	c.waitFor("alice's inbox to be acked", func() bool { return c.agent("alice").InboxDepth == 0 })
	a := c.agent("alice")
	if len(a.Runs) != 1 || a.Runs[0].State != "succeeded" {
		t.Fatalf("alice's runs = %+v", a.Runs)
	}
	reqs := model.requests(t)
	first, ok := requestWith(reqs, "SYSTEM-MARK-42", "PROMPT-MARK-1")
	if !ok {
		t.Fatalf("no model request carried both the system prompt and the prompt; %d requests", len(reqs))
	}
	if first.Body["model"] != "claude-sonnet-4-5" {
		t.Errorf("model = %v, want the provider prefix stripped", first.Body["model"])
	}
	session := c.sessionOf(a.Runs[0].ID)
	if session == "" {
		t.Fatal("the first run reported no session")
	}

	t.Run("second message resumes the conversation", func(t *testing.T) {
		model.add(t, modelTurn{"Text": "second run done"})
		c.ok("send", "alice", "anything new? PROMPT-MARK-2")
		c.waitFor("alice's second run", func() bool {
			a := c.agent("alice")
			return len(a.Runs) == 2 && a.Runs[0].State == "succeeded" && a.InboxDepth == 0
		})
		// Resumed, claude sends the first conversation again with the new prompt.
		second, ok := requestWith(model.requests(t), "PROMPT-MARK-2")
		if !ok {
			t.Fatal("no model request carried the second prompt")
		}
		if !replaysToolCall(second, "mcp__agent-worker__channel_send") || !bytes.Contains(second.RawBody, []byte("first run done")) {
			t.Error("the second run's model request does not replay the first run's conversation: it was not resumed")
		}
		if got := c.sessionOf(c.agent("alice").Runs[0].ID); got != session {
			t.Errorf("second run's session = %q, want the first's %q", got, session)
		}
		if out := c.ok("peek"); !strings.Contains(out, "[alice] second run done") {
			t.Errorf("the second run's answer is not in the channel:\n%s", out)
		}
	})

	t.Run("a lost session starts a new conversation", func(t *testing.T) {
		// Under the sandbox claude keeps its sessions in the agent's own
		// config directory (CLAUDE_CONFIG_DIR in its state), not in ~/.claude.
		config := filepath.Join(c.home, "state", "global", "main", "alice", "claude", "config")
		files, _ := filepath.Glob(filepath.Join(config, "projects", "*", session+".jsonl"))
		if len(files) == 0 {
			t.Fatalf("claude kept no file for session %s under %s", session, config)
		}
		for _, f := range files {
			os.Remove(f)
		}
		model.add(t, modelTurn{"Text": "third run done"})
		c.ok("send", "alice", "still there? PROMPT-MARK-3")
		c.waitFor("alice's third run", func() bool {
			a := c.agent("alice")
			return len(a.Runs) == 3 && a.Runs[0].State == "succeeded" && a.InboxDepth == 0
		})
		run := c.agent("alice").Runs[0]
		if got := c.sessionOf(run.ID); got == "" || got == session {
			t.Errorf("third run's session = %q, want a new one", got)
		}
		d, err := c.client().GetRun(context.Background(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(mustJSON(t, d.Events), []byte("starting a new conversation")) {
			t.Error("the third run's transcript does not say it dropped the lost session")
		}
	})
}

// Claude Code's own tools under the daemon's gate (issue 43): in phase
// plan of the example skill the model's Write, which the agent's config
// allows, is refused by the run's PreToolUse hook (the plugin binary
// asking the daemon, inside the run's sandbox); the model reads the
// phase's reason as the tool's result, the file is not written, and the
// transcript shows the gate event.
func TestE2EClaudeGated(t *testing.T) {
	t.Parallel()
	realCLI(t, "claude")
	c := newCLI(t)
	dir := filepath.Join(realPath(t, c.home), "workspaces", "global", "main", "alice")
	model := startModel(t, false,
		modelTurn{"Tools": []any{map[string]any{"ID": "toolu_w1", "Name": "Write", "Args": map[string]any{"file_path": filepath.Join(dir, "main.go"), "content": "package main\n"}}}},
		modelTurn{"Text": "I will plan first"})
	c.startClaudeDaemon(model.URL)
	if !sandboxOn(c) {
		t.Errorf("the daemon does not confine runs: the hook is not shown to work in the sandbox:\n%s", c.ok("status"))
	}
	c.ok("new", "alice", "--backend", "claude", "--config", `{"allowed_tools": ["Write"]}`)
	db, e := startEffortE2E(t, c, "alice", dir, 0)

	c.ok("send", "alice", "plan the change")
	c.refused("alice", "phase plan of skill implement does not allow Write", model, filepath.Join(dir, "main.go"), db, e, `"tool_use_id":"toolu_w1"`)
}

// refused checks what a call the gate refused in name's first run leaves:
// the gate event with reason in the transcript, a run that succeeded, the
// reason in the model's request after the call (the one holding marks),
// no file, and no evidence of effort e.
func (c *cli) refused(name, reason string, model *model, file string, db *store.DB, e store.Effort, marks ...string) {
	t := c.t
	t.Helper()
	logs := c.lastRunLogs(name, 1)
	if !strings.Contains(logs, "gate        "+reason) {
		t.Errorf("the transcript lacks the gate event with the phase's reason:\n%s", logs)
	}
	if a := c.agent(name); a.Runs[0].State != "succeeded" {
		t.Errorf("the run ended %s, want succeeded:\n%s", a.Runs[0].State, logs)
	}
	next, ok := requestWith(model.requests(t), marks...)
	if !ok || !bytes.Contains(next.RawBody, []byte(reason)) {
		t.Errorf("the model's request after the refused call does not carry the refusal (found: %v)", ok)
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("%s was written although the gate refused it", file)
	}
	obs, err := db.Observations(t.Context(), e.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 0 {
		t.Errorf("observations = %q, want none (a refused call is no evidence)", observed(obs))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// processesOf lists the live processes of the test whose home is home
// (HOME in their environment, which the daemon passes down) and whose
// command line contains what; parallel tests have other homes.
func processesOf(t *testing.T, home, what string) []int {
	t.Helper()
	return testkit.Pids(t, func(pid int) bool {
		dir := filepath.Join("/proc", strconv.Itoa(pid))
		cmdline, err1 := os.ReadFile(filepath.Join(dir, "cmdline"))
		environ, err2 := os.ReadFile(filepath.Join(dir, "environ"))
		return err1 == nil && err2 == nil && bytes.Contains(cmdline, []byte(what)) &&
			slices.Contains(strings.Split(string(environ), "\x00"), "HOME="+home)
	})
}

// kill -9 of the daemon while claude waits on the model leaves no claude
// process behind.
func TestE2EClaudeKilledDaemonLeavesNoCLI(t *testing.T) {
	t.Parallel()
	path := realCLI(t, "claude")
	model := startModel(t, true)
	c := newCLI(t)
	daemon := c.startClaudeDaemon(model.URL)
	c.ok("new", "alice", "--backend", "claude")
	c.ok("send", "alice", "think about it for a long time")
	model.next(t, "arrived") // claude now waits on the model
	if len(processesOf(t, c.home, path)) == 0 {
		t.Fatalf("no process runs %s although the model was asked", path)
	}
	if len(processesOf(t, c.home, "agent-worker-backend-claude")) == 0 {
		t.Fatal("no claude plugin process found")
	}
	if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	daemon.Wait()
	c.waitFor("every claude process to be gone", func() bool { return len(processesOf(t, c.home, path)) == 0 })
	c.waitFor("the claude plugin to be gone", func() bool { return len(processesOf(t, c.home, "agent-worker-backend-claude")) == 0 })
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The real Claude Code under a daemon that exports traces (issue 46): a
// Bash call of the scripted model echoes what the run's environment
// carries, and the model's next request, holding the tool's result,
// shows the TRACEPARENT of the run's own invoke_agent span (its trace
// the run's trace_id in runs --json) and Claude Code's own telemetry
// turned on; through the sandbox, which lets the run reach the collector,
// Claude Code's spans, metrics and logs land at the daemon's collector,
// its interaction span a child of the run's.
func TestE2EClaudeTraceparent(t *testing.T) {
	t.Parallel()
	realCLI(t, "claude")
	rcv := newOTLPReceiver(t)
	// Claude Code keeps the OTEL_EXPORTER_* variables out of its tools'
	// environment: where its telemetry goes shows at the collector.
	model := startModel(t, false,
		modelTurn{"Tools": []any{map[string]any{"ID": "toolu_tp1", "Name": "Bash", "Args": map[string]any{
			"command": `echo "TP=$TRACEPARENT CT=$CLAUDE_CODE_ENABLE_TELEMETRY END"`, "description": "show the trace"}}}},
		modelTurn{"Text": "traced run done"})
	c := newCLI(t)
	c.fixedEnv = append(c.env(), "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf")
	c.startClaudeDaemon(model.URL)
	if !sandboxOn(c) {
		t.Errorf("the daemon does not confine runs: the collector's port is not shown to be granted:\n%s", c.ok("status"))
	}
	c.ok("new", "alice", "--backend", "claude", "--config", `{"allowed_tools": ["Bash"]}`)
	c.ok("send", "alice", "show me your trace")
	c.waitFor("alice's run to end", func() bool {
		a := c.agent("alice")
		return len(a.Runs) == 1 && a.Runs[0].State.Ended()
	})
	var l api.RunList
	if err := json.Unmarshal([]byte(c.ok("runs", "alice", "--json")), &l); err != nil || len(l.Runs) != 1 {
		t.Fatalf("runs --json: %v, %+v", err, l)
	}
	run := l.Runs[0]
	if run.State != api.RunSucceeded || run.TraceID == "" {
		t.Fatalf("alice's run: state %s, trace %q; want succeeded with a trace:\n%s", run.State, run.TraceID, c.lastRunLogs("alice", 1))
	}
	after, ok := requestWith(model.requests(t), `"tool_use_id":"toolu_tp1"`)
	if !ok {
		t.Fatalf("no model request carried the Bash call's result:\n%s", c.lastRunLogs("alice", 1))
	}
	out := toolResult(after, "toolu_tp1")
	m := regexp.MustCompile(`TP=(\S*) CT=(\S*) END`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the Bash call's result is not its echo: %q", out)
	}
	tp, ct := m[1], m[2]
	// W3C trace context: version-traceid-parentid-flags.
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 {
		t.Fatalf("TRACEPARENT = %q, want a W3C traceparent", tp)
	}
	if parts[1] != run.TraceID {
		t.Errorf("TRACEPARENT's trace = %s, the run's trace_id = %s", parts[1], run.TraceID)
	}
	c.waitFor("the run's invoke_agent span at the collector", func() bool { return rcv.named("invoke_agent alice") != nil })
	runSpan := hex.EncodeToString(rcv.named("invoke_agent alice").SpanId)
	if parts[2] != runSpan {
		t.Errorf("TRACEPARENT's parent = %s, want the run's invoke_agent span %s", parts[2], runSpan)
	}
	if ct != "1" {
		t.Errorf("CLAUDE_CODE_ENABLE_TELEMETRY = %q in the run, want 1", ct)
	}

	// Claude Code's own telemetry, sent by its JavaScript OTLP exporter.
	c.waitFor("Claude Code's spans, metrics and logs at the collector", func() bool {
		seen := map[string]bool{}
		for _, e := range rcv.exportsBy("JavaScript") {
			seen[e.path] = true
		}
		return seen["/v1/traces"] && seen["/v1/metrics"] && seen["/v1/logs"] && rcv.named("claude_code.interaction") != nil
	})
	in := rcv.named("claude_code.interaction")
	if got := hex.EncodeToString(in.TraceId); got != run.TraceID || hex.EncodeToString(in.ParentSpanId) != runSpan {
		t.Errorf("Claude Code's interaction span is in trace %s under %x; want the run's trace %s under its span %s", got, in.ParentSpanId, run.TraceID, runSpan)
	}
}
