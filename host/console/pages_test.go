package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
)

// fullAPI answers the API calls of every page with every optional field
// set: a template that names a field the API type lacks fails only when
// it runs, so this runs them all.
func fullAPI(t *testing.T) http.Handler {
	now := time.Now().UTC()
	ended := now.Add(2 * time.Second)
	cost, usd := 0.42, 5.0
	tokens, runs := int64(100000), int64(50)
	spend := &api.Spend{Runs: 3, FailedRuns: 1, InputTokens: 1200, OutputTokens: 300, CostUSD: 0.42, UnpricedRuns: 1}
	wf := api.Workflow{Name: "crew", Tag: "main", Target: "@crew", State: api.WorkflowPaused, Error: "rejected edit: crew.yaml:3: bad",
		Agents: []string{"alice"}, Members: []api.Member{{Name: "alice", State: api.AgentRunning}}, Spend: spend,
		Budget: &contract.Budget{USD: &usd, Tokens: &tokens, Runs: &runs, Hard: true, Spent: *spend}, CreatedAt: now, UpdatedAt: now}
	global := api.Workflow{Name: api.GlobalWorkflow, Tag: "main", Target: "@global", State: api.WorkflowRunning, Members: []api.Member{}}
	alice := api.Agent{Name: "alice", Workflow: "crew", Tag: "main", Target: "alice@crew", Backend: "mock", Model: "m1",
		State: api.AgentRunning, Error: "last attempt failed", InboxDepth: 2, Spend: spend, CanSpawn: true, MaxSpawned: 3}
	bob := api.Agent{Name: "bob", Workflow: "crew", Tag: "main", Target: "bob@crew", Backend: "mock", State: api.AgentFailed, Error: "crashed", SpawnedBy: "alice",
		Session: &api.AttachedSession{ID: "5f0c2a9e-claude-session", Cwd: "/home/u/proj", AttachedAt: now, HeartbeatAt: now}}
	run := api.Run{ID: "run_1", Agent: "alice@crew", Backend: "mock", Attempt: 2, State: api.RunRunning, StartedAt: now, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
		Scope: "@crew", Model: "m1", InputTokens: 1200, OutputTokens: 300, CostUSD: &cost, CostSource: "plugin"}
	failed := api.Run{ID: "run_0", Agent: "bob@crew", Backend: "mock", Attempt: 1, State: api.RunFailed, StartedAt: now.Add(-time.Minute),
		EndedAt: &ended, DurationMS: 2000, Scope: "@crew", Error: "plugin crashed: exit status 3"}
	raw := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	events := []api.RunEvent{
		{N: 1, Kind: api.RunEventPrompt, At: now, Data: raw(api.PromptEvent{System: "You review.", InboxUntilSeq: 3, Omitted: 1,
			Inbox: []contract.PromptMessage{{Seq: 1, From: "user", To: "alice", Content: "look"}}})},
		{N: 2, Kind: "text", At: now, Data: raw(map[string]string{"text": "thinking"})},
		{N: 3, Kind: "tool_call", At: now, Data: raw(map[string]any{"Name": "channel_send", "Args": map[string]string{"message": "hi"}})},
		{N: 4, Kind: "tool_result", At: now, Data: raw(map[string]any{"Name": "channel_send", "Result": "refused", "IsError": true})},
		{N: 5, Kind: "usage", At: now, Data: raw(map[string]any{"InputTokens": 10, "OutputTokens": 5, "CostUSD": 0.01})},
		{N: 6, Kind: "session", At: now, Data: raw(map[string]string{"session_id": "s-1"})},
		{N: 7, Kind: "log", At: now, Data: raw(map[string]int{"truncated": 900000})},
		{N: 8, Kind: "odd", At: now, Data: json.RawMessage(`[1,2]`)},
	}
	msgs := []api.Message{
		{Seq: 1, From: "alice", Kind: "message", Content: strings.Repeat("a long review ", 100), Mentions: []string{"bob"}, ResourceID: "res_0123456789abcdef", CreatedAt: now},
		{Seq: 2, From: "bob", To: "alice", Kind: "message", Content: "a direct word", Mentions: []string{"alice"}, CreatedAt: now},
		{Seq: 3, From: "system", Kind: "system", Content: "paused by the loop guard", CreatedAt: now},
		{Seq: 4, From: "alice", Kind: "tool", Content: "team_doc_append notes.md", CreatedAt: now},
	}
	mux := http.NewServeMux()
	reply := func(pattern string, v any) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(v)
		})
	}
	reply("GET /health", api.Health{Version: "test", Agents: []api.Agent{alice, bob}, Workflows: []api.Workflow{wf, global},
		Problems: []string{"agent bob@crew failed: crashed"}, UptimeMS: 90000,
		Workers: []api.Worker{{Run: "run_1", Agent: "alice@crew", Backend: "mock", PID: 4242, StartedAt: now}},
		Cluster: &contract.Cluster{Member: "m-1", Members: []contract.ClusterMember{
			{ID: "m-1", Host: "h1", PID: 1, Address: "127.0.0.1:5101", Alive: true, HeartbeatAgeMS: 300},
			{ID: "m-2", Host: "h2", PID: 2, Address: "127.0.0.1:5102", HeartbeatAgeMS: 12000},
			{ID: "m-3", Host: "h3", PID: 3, Address: "127.0.0.1:5103", StoppedAt: &now}}}})
	reply("GET /workflows/{name}/{tag}", wf)
	reply("GET /workflows", api.WorkflowList{Workflows: []api.Workflow{wf, global}})
	reply("GET /agents", api.AgentList{Agents: []api.Agent{alice, bob}})
	reply("GET /runs", api.RunList{Runs: []api.Run{run, failed}})
	reply("GET /runs/{id}", contract.RunDetail{Run: run, Events: events})
	reply("GET /peek", api.MessageList{Messages: msgs})
	pct := 40
	reply("GET /tasks", api.TaskList{Tasks: []api.Task{
		{ID: "task-1", Title: "write the parser", State: "in_progress", Holder: "alice", Percent: &pct, Result: ""},
		{ID: "task-2", Title: "merge it", State: "pending", Assignee: "bob", Parent: "task-9", WaitingOn: []string{"task-1", "task-3"}},
		{ID: "task-3", Title: "docs", State: "pending", Ready: true},
		{ID: "task-4", Title: "lexer", State: "failed", Holder: "bob", Error: "gave up"},
		{ID: "task-5", Title: "tests", State: "completed", Holder: "alice", Result: "all green", Artifacts: []string{"out/report.md"}},
		{ID: "task-6", Title: "deploy", State: "cancelled", Role: "ops", Error: "plan changed"}}})
	reply("GET /worktrees/queue", api.QueueList{Entries: []api.QueueEntry{
		{ID: "mq-3", Agent: "bob", Branch: "aw/crew/main/bob", Base: "main", By: "alice", State: api.QueueQueued, Position: 1},
		{ID: "mq-2", Agent: "alice", Branch: "aw/crew/main/alice", Base: "main", By: "user", State: api.QueueLanded, Commit: "0123456789abcdef0123"},
		{ID: "mq-1", Agent: "bob", Branch: "aw/crew/main/bob", Base: "main", By: "alice", State: api.QueueFailed, Command: "go test ./...",
			Reason: "the check `go test ./...` exited with status 1 when it was merged onto main"}}})
	reply("GET /docs/{wf}/{tag}", api.DocumentList{Owner: "alice", Documents: []api.DocumentInfo{{Path: "notes/plan.md", Size: 120, UpdatedAt: now}}})
	reply("GET /docs/{wf}/{tag}/{path...}", contract.Document{Path: "notes/plan.md", Content: "# Plan\n\n- one\n"})
	reply("GET /proposals/{wf}/{tag}", api.ProposalList{Proposals: []api.Proposal{
		{ID: "prop-1", Type: "decision", Title: "Which database", Creator: "alice", Options: []string{"postgres", "sqlite"},
			Resolution: "plurality", Binding: true, State: "resolved", Winner: "postgres",
			Votes: []api.Vote{{Voter: "alice", Choice: "postgres", Reason: "writers"}, {Voter: "bob", Choice: "sqlite"}}},
		{ID: "prop-2", Type: "approval", Title: "Ship", Creator: "bob", Options: []string{"yes", "no"}, State: "active"}}})
	reply("GET /questions", api.QuestionList{Questions: []api.Question{
		{ID: "q_1", Agent: "alice@crew:main", Kind: "question", Question: "pg or sqlite?", Options: []string{"pg", "sqlite"},
			Context: "the team cannot agree", RunID: "run_1", State: "pending", CreatedAt: now.Add(-2 * time.Minute)},
		{ID: "q_2", Agent: "bob@crew:main", Kind: "approval", Question: "run_shell: git push origin main", State: "pending", CreatedAt: now}}})
	reply("GET /resources/{wf}/{tag}/{id}", api.Resource{ID: "res_0123456789abcdef", Type: "markdown", Content: "the whole review", CreatedBy: "alice", CreatedAt: now})
	reply("GET /plugins", api.PluginList{Dirs: []string{"/p"}, Plugins: []api.Plugin{
		{Name: "mock", Kind: "backend", Path: "/p/agent-worker-backend-mock", SHA256: strings.Repeat("ab", 32), Version: "1.0", Status: "ok",
			Spares: &api.SpareStats{Live: 1, Started: 3, Used: 2, ColdStarts: 1}},
		{Name: "mock", Kind: "backend", Path: "/q/agent-worker-backend-mock", Shadowed: true},
		{Name: "s3", Kind: "docs", Path: "/p/agent-worker-docs-s3", Error: "handshake failed"}}})
	aliceEffort := api.EffortRow{ID: "effort-2", Agent: "alice@crew:main", Skill: "implement", Dir: "/p/src", Ordinal: 2, State: "active",
		Phase: 2, Phases: 4, PhaseName: "test-first", StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-3 * time.Minute),
		ContextTokens: 50000, ContextWindow: 200000}
	reply("GET /efforts", api.EffortList{Efforts: []api.EffortRow{aliceEffort}})
	reply("GET /efforts/{id}", effortShow(aliceEffort, now))
	reply("GET /efforts/{id}/artifacts/{name}", api.EffortArtifactFile{EffortArtifact: api.EffortArtifact{Name: "2_IMPLEMENT_PLAN.md", Kind: "plan", Size: 30, UpdatedAt: now},
		Dir: "/p/src", Content: "# The plan\n\n<script>window.__owned = 1</script>\n\n- step one\n", Truncated: true})
	mux.HandleFunc("GET /search/{wf}/{tag}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Query().Get("q"), `"`) {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(api.Errorf(api.CodeInvalid, "search query has an unclosed quote: close the phrase with \""))
			return
		}
		_ = json.NewEncoder(w).Encode(api.SearchResult{Query: r.URL.Query().Get("q"), Hits: []api.SearchHit{
			{Kind: "message", Workflow: "crew", Tag: "main", Seq: 2, Sender: "bob", To: "alice", Snippet: "a «direct» word <script>", At: now},
			{Kind: "doc", Workflow: "crew", Tag: "main", Path: "notes/plan.md", Snippet: "the «plan» » stray", At: now},
			{Kind: "run", Workflow: "crew", Tag: "main", RunID: "run_1", Agent: "alice", Event: 2, Snippet: "«thinking»", At: now}}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a page called %s %s, which this test does not answer", r.Method, r.URL)
		http.NotFound(w, r)
	})
	return mux
}

// effortShow is e at its second phase: the first completed with a proof,
// notes and met evidence, what was observed in both, a plan written.
func effortShow(e api.EffortRow, now time.Time) api.EffortShow {
	zero := 0
	return api.EffortShow{EffortRow: e, Mode: "solo", Dirs: []string{"/p/docs"}, Directives: []string{"/p/AGENTS.md"},
		Timeline: []api.EffortPhase{
			{N: 1, Of: 4, Name: "plan", Instructions: "Write the plan in 2_IMPLEMENT_PLAN.md.", Proof: []api.EffortProofField{{Name: "plan_summary", Type: "string"}},
				Artifacts: []string{"2_IMPLEMENT_PLAN.md"}, Tools: "deny Edit"},
			{N: 2, Of: 4, Name: "test-first", Proof: []api.EffortProofField{{Name: "failing_test", Type: "string"}, {Name: "notes", Type: "string", Optional: true}},
				Evidence: []string{"a file matching `*_test.go` written"}, Missing: []string{"a file matching `*_test.go` written"}},
			{N: 3, Of: 4, Name: "implement"},
			{N: 4, Of: 4, Name: "verify", Evidence: []string{"`go test ./...` that exited 0"}},
		},
		History: []api.EffortCheckpoint{
			{N: 1, Phase: 1, PhaseName: "plan", Kind: "entered", Run: "run_1", At: now.Add(-time.Hour)},
			{N: 2, Phase: 1, PhaseName: "plan", Kind: "completed", Run: "run_1", At: now.Add(-30 * time.Minute),
				Proof:    map[string]any{"plan_summary": "add <script>window.__owned = 1</script> safely", "files": []any{"a.go", "b.go"}, "steps": float64(3)},
				Notes:    "**planned** with care <script>window.__owned = 1</script>",
				Evidence: []any{map[string]any{"evidence": "`go list ./...` that exited 0", "kind": "shell", "subject": "go list ./...", "exit": float64(0)}}},
			{N: 3, Phase: 2, PhaseName: "test-first", Kind: "entered", Run: "run_1", At: now.Add(-30 * time.Minute)},
		},
		Observations: []api.EffortObservation{
			{Phase: 1, N: 1, Kind: "shell", Subject: "go list ./...", Exit: &zero, Run: "run_1", At: now.Add(-40 * time.Minute)},
			{Phase: 2, N: 1, Kind: "file", Subject: "/p/src/x_test.go", Run: "run_1", At: now.Add(-10 * time.Minute)},
		},
		Artifacts: []api.EffortArtifact{{Name: "2_IMPLEMENT_PLAN.md", Kind: "plan", Size: 30, UpdatedAt: now}},
	}
}

// Every page renders with every optional field set, and shows it.
func TestEveryPageRendersEveryField(t *testing.T) {
	s := New(Config{TraceURL: "http://localhost:16686/trace/{trace_id}"})
	h := s.Handler(fullAPI(t))
	cookie := &http.Cookie{Name: cookieName, Value: s.newSession()}
	pages := map[string][]string{
		"/console/": {"@crew", "standalone agents", "rejected edit", "agent bob@crew failed", "run_1", "4242", "of $5.00", "1.5k of 100.0k tokens", "3 of 50 runs", "team_doc_append notes.md",
			"m-1 <span class=\"muted\">(this one)</span>", "127.0.0.1:5102", "not responding", "stopped",
			"Needs you", `<a href="/console/team/crew/main"><b>alice@crew</b></a> asks you`, "pg or sqlite?", "the team cannot agree", "2m ago",
			`<b>bob@crew</b></a> waits for your approval`, "run_shell: git push origin main"},
		"/console/team/crew/main": {"@crew", "Resume team", "run_1", "Cancel run", "DM → alice", "@bob", "show the rest", "res_0123456789abcdef", "2 unread", "last attempt failed", "spawned by alice", "may spawn 3",
			"Claude Code session 5f0c2a9e… in /home/u/proj",
			`<div class="effort"><a href="/console/efforts/effort-2">implement #2</a> · phase 2/4 <b>test-first</b> · <span class="muted">heartbeat 3m ago</span></div>`,
			"task-1", "40%", "waits for task-1, task-3", "under task-9", "for bob", "anyone", "ready", "gave up", "all green", "artifacts: out/report.md", "cancelled: plan changed",
			"Merge queue", "<b>mq-3</b> bob", "aw/crew/main/bob → main, asked by alice", "1 ahead", "<code>0123456789ab…</code>",
			"exited with status 1 when it was merged onto main", "agent-worker worktree queue show mq-1",
			"Needs you", `data-needs-you="/console/needs-you?target=%40crew%3Amain"`, "<b>alice</b> asks you", `<button class="b-option">sqlite</button>`,
			`action="/console/questions/q_1/answer"`, "<b>bob</b> waits for your approval", `action="/console/questions/q_2/approve"`, `action="/console/questions/q_2/deny"`},
		"/console/team/crew/main/messages?after=0":          {`id="m4"`, "team_doc_append notes.md"},
		"/console/docs/crew/main":                           {"Owner: <b>alice</b>", "notes/plan.md", "prop-1", "Which database", "postgres <span class=\"muted\">1 vote(s)", "winner", "alice</b> → postgres", "writers", "binding", "No votes yet."},
		"/console/docs/crew/main/notes/plan.md":             {"<h1>Plan</h1>", "<li>one</li>", "Owner: alice"},
		"/console/resources/crew/main/res_0123456789abcdef": {"the whole review", "markdown by alice"},
		"/console/runs?target=%40crew&failed=true&limit=5":  {"run_0", "plugin crashed", "unpriced", "$0.4200", "checked"},
		"/console/runs/run_1": {"You review.", "inbox up to #3", "1 newer not recorded", "(DM → alice)", "thinking", "channel_send", "tool error", "refused", "10 tokens in, 5 out, $0.0100", "session s-1", "too large to keep", "  1,\n  2", "live", "Cancel run", "(plugin)",
			`<a id="trace" href="http://localhost:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736"`},
		"/console/cost": {"<svg", "<polyline", "alice@crew", "@crew", "Priced in US dollars"},
		"/console/team/crew/main/search?q=direct&kind=message": {`value="direct"`, `<option value="message" selected>`,
			`<a href="/console/team/crew/main?at=2#m2">#2 from bob (DM → alice)</a>`, "a <mark>direct</mark> word &lt;script&gt;",
			`<a href="/console/docs/crew/main/notes/plan.md">notes/plan.md</a>`, "the <mark>plan</mark> » stray",
			`<a href="/console/runs/run_1#e2">run run_1 by alice, event #2</a>`, "<mark>thinking</mark>"},
		"/console/team/crew/main/search?q=%22unclosed": {`<p class="err" id="search-error">search query has an unclosed quote`, `value="&#34;unclosed"`},
		"/console/team/crew/main?at=1":                 {`id="m1"`, `action="/console/team/crew/main/search"`},
		"/console/runs/run_1#e2":                       {`id="e2"`},
		"/console/efforts/effort-2": {"implement #2", "effort-2</b> by alice@crew in <code>/p/src</code> · solo", "phase 2 of 4, <b>test-first</b>", "last heartbeat 3m ago",
			"context 50.0k of 200.0k", `data-stream="/console/events?target=%40crew"`, `<a href="/console/team/crew/main">← team @crew</a>`,
			`<li class="phase p-done" data-phase="1">`, `<li class="phase p-current" data-phase="2">`, `<li class="phase p-to-come" data-phase="3">`,
			"Write the plan in 2_IMPLEMENT_PLAN.md.", "asks for proof: plan_summary (string)", "failing_test (string), notes (string, optional)",
			"not seen yet: a file matching `*_test.go` written", "tools: deny Edit",
			`<li><b>files</b>: <span class="value">[&#34;a.go&#34;,&#34;b.go&#34;]</span></li><li><b>plan_summary</b>: <span class="value">add &lt;script&gt;window.__owned = 1&lt;/script&gt; safely</span></li><li><b>steps</b>: <span class="value">3</span></li>`,
			"`go list ./...` that exited 0: met by shell <code>go list ./...</code>, exit 0", "<strong>planned</strong> with care",
			"<td>file</td><td><code>/p/src/x_test.go</code></td><td><span class=\"muted\">–</span></td>", "<td>shell</td><td><code>go list ./...</code></td><td>0</td>",
			`<a href="/console/efforts/effort-2/artifacts/2_IMPLEMENT_PLAN.md">2_IMPLEMENT_PLAN.md</a> <span class="muted">plan · 30 bytes`,
			"also works in: <code>/p/docs</code>", "<code>/p/AGENTS.md</code>"},
		"/console/efforts/effort-2/artifacts/2_IMPLEMENT_PLAN.md": {"<h1>The plan</h1>", "<li>step one</li>", "plan of effort-2 in <code>/p/src</code>", "read-only",
			"longer than the console shows", `<a href="/console/efforts/effort-2">← implement #2 (effort-2)</a>`},
		"/console/plugins": {"abababababab", "1 · 3 · 2 · 1", "shadowed", "handshake failed", "run_0", "plugin crashed"},
	}
	for path, wants := range pages {
		req := httptest.NewRequest("GET", path, nil)
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", path, rec.Code, body)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(string(body), want) {
				t.Errorf("GET %s lacks %q", path, want)
			}
		}
		for _, bad := range []string{"<no value>", "%!", "&lt;no value&gt;"} {
			if strings.Contains(string(body), bad) {
				t.Errorf("GET %s shows %q", path, bad)
			}
		}
	}
}
