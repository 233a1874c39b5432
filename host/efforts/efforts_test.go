package efforts

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/host/gate"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// fixture is a store with alice@wf:main, whose workflow works in project
// (with skills: [skills] holding the example implement skill), and the
// service over it.
type fixture struct {
	db      *store.DB
	svc     *Service
	project string
	alice   store.AgentKey
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx := t.Context()
	root := t.TempDir()
	project := filepath.Join(root, "project")
	skills := filepath.Join(project, "skills", "implement")
	if err := os.MkdirAll(filepath.Join(project, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(skills, 0o755); err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile("../../examples/skills/implement/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skills, "SKILL.md"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, filepath.Join(root, "aw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	wfFile := filepath.Join(project, "wf.yaml")
	yml := "name: wf\nskills: [skills]\nagents: {alice: {backend: mock}}\n"
	if _, err := db.CreateWorkflow(ctx, store.Workflow{Name: "wf", Tag: "main", SourcePath: wfFile, ConfigYAML: yml, Workdir: project}); err != nil {
		t.Fatal(err)
	}
	alice := store.AgentKey{Name: "alice", Workflow: "wf", Tag: "main"}
	if _, err := db.CreateAgent(ctx, store.Agent{Name: "alice", Workflow: "wf", Tag: "main", Backend: "mock"}); err != nil {
		t.Fatal(err)
	}
	svc, err := New(ctx, Config{DB: db, UserHome: filepath.Join(root, "home")})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{db: db, svc: svc, project: project, alice: alice}
}

func wantErr(t *testing.T, what string, err error, code contract.Code, text string) {
	t.Helper()
	if err == nil || contract.ErrorCode(err) != code || !strings.Contains(err.Error(), text) {
		t.Fatalf("%s: error %v (code %s), want %s containing %q", what, err, contract.ErrorCode(err), code, text)
	}
}

// A start answers the first phase with its artifact named, and a token;
// continuing walks one phase at a time; a forged token, a replayed one
// and a proof of the wrong type are refused and change nothing; the
// evidence of a phase must have been observed in it.
func TestWalk(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	dir := filepath.Join(f.project, "src")
	res, err := f.svc.Start(ctx, StartRequest{Agent: f.alice, Dir: dir, Skill: "implement"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ordinal != 1 || res.Phase == nil || res.Phase.Name != "plan" || res.Phase.N != 1 || res.Phase.Of != 4 || res.Token == "" {
		t.Fatalf("start = %+v", res)
	}
	if !strings.Contains(res.Phase.Instructions, "1_IMPLEMENT_PLAN.md") || strings.Contains(res.Phase.Instructions, "{{") {
		t.Errorf("instructions not expanded: %q", res.Phase.Instructions)
	}
	first := res.Token

	_, err = f.svc.Continue(ctx, Step{Agent: f.alice, Token: first[:len(first)-2] + "xx", Proof: Proof{Typed: map[string]any{"plan_summary": "x"}}})
	wantErr(t, "forged token", err, contract.CodeInvalid, "not a token of this daemon")
	_, err = f.svc.Continue(ctx, Step{Agent: f.alice, Token: first, Proof: Proof{Typed: map[string]any{"plan_summary": 3}}})
	wantErr(t, "proof of the wrong type", err, contract.CodeInvalid, "plan_summary")
	_, err = f.svc.Finish(ctx, FinishRequest{Agent: f.alice, Token: first})
	wantErr(t, "finish from the first phase", err, contract.CodeConflict, "phases are walked in order")

	res, err = f.svc.Continue(ctx, Step{Agent: f.alice, Token: first, Proof: Proof{Typed: map[string]any{"plan_summary": "add x"}}, Notes: "plan in 1_IMPLEMENT_PLAN.md"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Phase.Name != "test-first" || res.Token == first {
		t.Fatalf("after plan: %+v", res)
	}
	_, err = f.svc.Continue(ctx, Step{Agent: f.alice, Token: first, Proof: Proof{Typed: map[string]any{"plan_summary": "add x"}}})
	wantErr(t, "replayed token", err, contract.CodeConflict, "already used: the effort is at phase 2 of 4, test-first")

	// test-first needs a *_test.go written in it: nothing observed, refused
	// with the proof's problem too; observed in the phase, it moves.
	_, err = f.svc.Continue(ctx, Step{Agent: f.alice, Token: res.Token})
	wantErr(t, "no evidence", err, contract.CodeInvalid, "test-first needs a file matching `*_test.go` to be written")
	wantErr(t, "no evidence", err, contract.CodeInvalid, "failing_test")
	st, err := f.svc.Status(ctx, f.alice, true)
	if err != nil || len(st.Phase.Missing) != 1 || st.Token != res.Token {
		t.Fatalf("status = %+v, %v", st, err)
	}
	e, _, _ := f.db.ActiveEffort(ctx, f.alice)
	if _, err := f.db.Observe(ctx, e.ID, e.Phase, store.ObservedFile, filepath.Join(dir, "x_test.go"), nil, "run_1"); err != nil {
		t.Fatal(err)
	}
	res, err = f.svc.Continue(ctx, Step{Agent: f.alice, Token: res.Token, Proof: Proof{Text: map[string]string{"failing_test": "TestX"}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err = f.svc.Continue(ctx, Step{Agent: f.alice, Token: res.Token})
	if err != nil || res.Phase.Name != "verify" {
		t.Fatalf("to verify: %+v, %v", res, err)
	}
	// verify: no observation, no finish.
	_, err = f.svc.Finish(ctx, FinishRequest{Agent: f.alice, Token: res.Token, Proof: Proof{Typed: map[string]any{"tests_run": 3}}})
	wantErr(t, "verify without evidence", err, contract.CodeInvalid, "`go test ./...` that exited 0")
	e, _, _ = f.db.ActiveEffort(ctx, f.alice)
	zero := 0
	for _, cmd := range []string{"go test ./...", "go vet ./..."} {
		if _, err := f.db.Observe(ctx, e.ID, e.Phase, store.ObservedShell, cmd, &zero, "run_1"); err != nil {
			t.Fatal(err)
		}
	}
	done, err := f.svc.Continue(ctx, Step{Agent: f.alice, Token: res.Token, Proof: Proof{Typed: map[string]any{"tests_run": 3}}, Notes: "all done"})
	if err != nil || done.State != "finished" || done.Token != "" {
		t.Fatalf("finish = %+v, %v", done, err)
	}
	show, err := f.svc.Show(ctx, done.Effort, nil)
	if err != nil {
		t.Fatal(err)
	}
	last := show.History[len(show.History)-1]
	if last.Kind != "finished" || last.Notes != "all done" || len(last.Evidence) != 2 || last.Proof["tests_run"] != float64(3) {
		t.Errorf("last checkpoint = %+v", last)
	}

	// Effort 2 on the same dir: ordinal 2, effort 1's debrief.
	if err := os.WriteFile(filepath.Join(dir, "1_IMPLEMENT.md"), []byte("# debrief one"), 0o644); err != nil {
		t.Fatal(err)
	}
	two, err := f.svc.Start(ctx, StartRequest{Agent: f.alice, Dir: dir, Skill: "implement"})
	if err != nil {
		t.Fatal(err)
	}
	if two.Ordinal != 2 || len(two.Debriefs) != 1 || two.Debriefs[0].Text != "# debrief one" {
		t.Errorf("second effort = %+v", two)
	}
}

// Bad starts say what is wrong and start nothing.
func TestStartRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	outside := t.TempDir()
	link := filepath.Join(f.project, "out")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		req  StartRequest
		code contract.Code
		text string
	}{
		"unknown skill":  {StartRequest{Agent: f.alice, Dir: f.project, Skill: "implemnt"}, contract.CodeNotFound, "did you mean implement?"},
		"relative dir":   {StartRequest{Agent: f.alice, Dir: "src", Skill: "implement"}, contract.CodeInvalid, "must be an absolute path"},
		"outside":        {StartRequest{Agent: f.alice, Dir: outside, Skill: "implement"}, contract.CodePermission, "outside the workspace"},
		"dot-dot escape": {StartRequest{Agent: f.alice, Dir: f.project + "/../..", Skill: "implement"}, contract.CodePermission, "outside the workspace"},
		"symlink out":    {StartRequest{Agent: f.alice, Dir: link, Skill: "implement"}, contract.CodePermission, "outside the workspace"},
		"no agent":       {StartRequest{Agent: store.AgentKey{Name: "bob", Workflow: "wf", Tag: "main"}, Dir: f.project, Skill: "implement"}, contract.CodeNotFound, "bob"},
		"bad mode":       {StartRequest{Agent: f.alice, Dir: f.project, Skill: "implement", Mode: "Two Words"}, contract.CodeInvalid, "mode"},
	} {
		_, err := f.svc.Start(ctx, tc.req)
		wantErr(t, name, err, tc.code, tc.text)
	}
	if es, _ := f.db.Efforts(ctx, store.EffortFilter{All: true}); len(es) != 0 {
		t.Errorf("refused starts left %d efforts", len(es))
	}
	if _, err := f.svc.Start(ctx, StartRequest{Agent: f.alice, Dir: f.project, Skill: "implement"}); err != nil {
		t.Fatal(err)
	}
	_, err := f.svc.Start(ctx, StartRequest{Agent: f.alice, Dir: f.project, Skill: "implement"})
	wantErr(t, "second active effort", err, contract.CodeConflict, "already has an active effort")
}

// Another daemon's token (another key) is not one of ours; effort_log
// appends dated lines under a heading; a run's context names the phase,
// the notes, the last log lines, and brings each directive in once.
func TestLogAndRunContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	dir := filepath.Join(f.project, "src")
	if err := os.WriteFile(filepath.Join(f.project, "AGENTS.md"), []byte("be careful"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Start(ctx, StartRequest{Agent: f.alice, Dir: dir, Skill: "implement"})
	if err != nil {
		t.Fatal(err)
	}
	other := &signer{key: []byte("another daemon's key, 32 bytes..")}
	forged := other.Sign(token{Effort: res.Effort, Phase: 0, Nonce: "x"})
	_, err = f.svc.Continue(ctx, Step{Agent: f.alice, Token: forged})
	wantErr(t, "another daemon's token", err, contract.CodeInvalid, "not a token of this daemon")

	for _, text := range []string{"chose x", "because\ny"} {
		if _, err := f.svc.Log(ctx, f.alice, text); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "1_IMPLEMENT_LOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "# implement log") || !strings.HasSuffix(lines[3], "Z because y") {
		t.Errorf("log file:\n%s", b)
	}
	if _, err := f.svc.Continue(ctx, Step{Agent: f.alice, Token: res.Token, Proof: Proof{Typed: map[string]any{"plan_summary": "p"}}, Notes: "planned x"}); err != nil {
		t.Fatal(err)
	}
	rc, err := f.svc.RunContext(ctx, f.alice)
	if err != nil || rc == nil {
		t.Fatalf("RunContext: %v", err)
	}
	if rc.Phase.Name != "test-first" || len(rc.Notes) != 1 || rc.Notes[0].Notes != "planned x" ||
		!strings.Contains(rc.Here, "phase 2 of 4, test-first") || !strings.Contains(rc.Here, "because y") || rc.Token == "" {
		t.Errorf("run context = %+v", rc)
	}
	if len(rc.Directives) != 1 || rc.Directives[0].Content != "be careful" {
		t.Errorf("directives = %+v, want the project's AGENTS.md", rc.Directives)
	}
	rc, err = f.svc.RunContext(ctx, f.alice)
	if err != nil || len(rc.Directives) != 0 {
		t.Errorf("second run's directives = %+v, %v: each is brought in once", rc.Directives, err)
	}
	if ok, err := f.svc.Ensure(ctx, f.alice, dir, "implement"); ok || err != nil {
		t.Errorf("Ensure with an active effort = %v, %v", ok, err)
	}
}

// A directory inside the effort's directory that a run was seen reading
// (host/gate.Watch records it in the store) brings the skill's directive
// files of that directory and of its parents into the agent's next run,
// each once; the first run had none to bring.
func TestTouchedDirsBringTheirDirectives(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	dir := filepath.Join(f.project, "src")
	deep := filepath.Join(dir, "pkg", "deep")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, content := range map[string]string{
		filepath.Join(dir, "pkg", "AGENTS.md"):    "pkg rules",
		filepath.Join(deep, "INVARIANTS.md"):      "deep invariants",
		filepath.Join(dir, "other", "AGENTS.md"):  "never brought",
		filepath.Join(deep, "NOT_A_DIRECTIVE.md"): "no",
	} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.Start(ctx, StartRequest{Agent: f.alice, Dir: dir, Skill: "implement"}); err != nil {
		t.Fatal(err)
	}
	rc, err := f.svc.RunContext(ctx, f.alice)
	if err != nil || len(rc.Directives) != 0 {
		t.Fatalf("first run's directives = %+v, %v; want none", rc.Directives, err)
	}

	watch := gate.New(f.db, nil).Watch(f.alice, "run-1", dir)
	watch(ctx, backend.Event{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"pkg/deep/x.go"}`)}})
	watch(ctx, backend.Event{Kind: backend.EventToolResult, Tool: &backend.ToolCall{ID: "c1", Name: "read_file", Result: "package deep"}})

	rc, err = f.svc.RunContext(ctx, f.alice)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range rc.Directives {
		got[d.Path] = d.Content
	}
	want := map[string]string{filepath.Join(dir, "pkg", "AGENTS.md"): "pkg rules", filepath.Join(deep, "INVARIANTS.md"): "deep invariants"}
	if !maps.Equal(got, want) {
		t.Errorf("next run's directives = %q, want %q", got, want)
	}
	rc, err = f.svc.RunContext(ctx, f.alice)
	if err != nil || len(rc.Directives) != 0 {
		t.Errorf("third run's directives = %+v, %v: each is brought in once", rc.Directives, err)
	}
}

// A start brings what the team's search finds about the directory's name
// (here a message that mentions it), and nothing for a name nobody wrote.
func TestStartBringsEarlierNotes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.db.AppendMessage(ctx, store.NewMessage{Workflow: "wf", Tag: "main", Sender: "bob",
		Content: "the payments module rounds twice: keep an eye on payments when you touch it"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.project, "payments")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Start(ctx, StartRequest{Agent: f.alice, Dir: dir, Skill: "implement"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Earlier) != 1 || res.Earlier[0].From != "bob" || !strings.Contains(res.Earlier[0].Snippet, "rounds twice") {
		t.Fatalf("earlier notes of payments: %+v, want bob's message", res.Earlier)
	}
	if _, err := f.svc.Finish(ctx, FinishRequest{Agent: f.alice, Abandon: true, Reason: "next"}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(f.project, "ledger")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	res, err = f.svc.Start(ctx, StartRequest{Agent: f.alice, Dir: other, Skill: "implement"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Earlier) != 0 {
		t.Fatalf("earlier notes of ledger, which nobody wrote about: %+v", res.Earlier)
	}
}
