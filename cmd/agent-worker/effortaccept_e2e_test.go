package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// installExample puts examples/skills/implement/SKILL.md in the user's
// skills folder of c's home, where the daemon finds it.
func installExample(t *testing.T, c *cli) {
	t.Helper()
	b, err := os.ReadFile("../../examples/skills/implement/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(c.home, ".agent-worker", "skills", "implement")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// goStub is the test project's `go`: a run's sandbox has no Go build
// cache, so the project brings a stand-in in bin/ that the agent's PATH
// finds first. `go test` passes once Feature returns 2, as the real test
// in feature_test.go would; `go vet` passes. It returns the agent's env.
const goStub = `#!/bin/sh
case "$1" in
test)
	if grep -q 'return 2' feature.go 2>/dev/null; then
		echo 'ok  	example.com/feature	0.01s'
		exit 0
	fi
	echo '--- FAIL: TestFeature (0.00s)'
	echo '    feature_test.go:6: Feature() != 2'
	echo 'FAIL	example.com/feature	0.01s'
	exit 1 ;;
vet) exit 0 ;;
*) echo "go stub: $*" >&2; exit 2 ;;
esac
`

// goProject makes dir a project with the go stub in dir/bin and returns
// the env that puts it first on an agent's PATH.
func goProject(t *testing.T, dir string) map[string]string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(goStub), 0o755); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"PATH": bin + string(os.PathListSeparator) + os.Getenv("PATH")}
}

const (
	featureTest = "package feature\n\nimport \"testing\"\n\nfunc TestFeature(t *testing.T) {\n\tif Feature() != 2 {\n\t\tt.Fatal(\"Feature() != 2\")\n\t}\n}\n"
	featureBug  = "package feature\n\nfunc Feature() int { return 1 }\n"
	featureFix  = "package feature\n\nfunc Feature() int { return 2 }\n"
	debriefOne  = "# Debrief\n\nFeature returns 2. The first version returned 1: go test caught it in verify.\n"
)

// Issue 43's acceptance, with a mock agent walking the example skill
// (examples/skills/implement) through real daemon runs, the effort
// started by the agent itself over MCP: in plan a write is refused with
// the phase's reason, which the script reads, while the plan artifact is
// written; a skipped phase and a replayed token are refused; test-first
// ends once a *_test.go file was written; effort_log writes
// 1_IMPLEMENT_LOG.md; verify cannot finish before `go test ./...` and
// `go vet ./...` were observed exiting 0 in it (a `go test ./...` that
// exits 1 does not count); the debrief 1_IMPLEMENT.md is written in
// verify. A second effort on the directory is number 2 and starts with
// effort 1's debrief.
func TestE2EEffortAcceptanceOfTheMock(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	installExample(t, c)
	dir := filepath.Join(realPath(t, c.home), "workspaces", "global", "main", "alice")
	env := goProject(t, dir)
	c.startDaemon()

	walk := map[string]any{"text": "walk"}
	again := map[string]any{"text": "again"}
	tool := func(when map[string]any, name string, args map[string]any) map[string]any {
		return map[string]any{"tool": name, "args": args, "when": when}
	}
	write := func(when map[string]any, path, content string) map[string]any {
		return map[string]any{"write": path, "content": content, "when": when}
	}
	shell := func(when map[string]any, line string) map[string]any {
		return map[string]any{"shell": line, "when": when}
	}
	say := func(when map[string]any, text string) map[string]any {
		return map[string]any{"text": text + "\n", "when": when}
	}
	finish := map[string]any{"token": "{{step.15.token}}", "proof": map[string]any{"tests_run": 1}}
	script := []map[string]any{
		tool(walk, "effort_start", map[string]any{"dir": dir, "skill": "implement"}),                   // 1
		write(walk, "feature.go", featureFix),                                                          // 2: plan denies write_file
		say(walk, "plan refused the write: {{last.error}}"),                                            // 3
		write(walk, "1_IMPLEMENT_PLAN.md", "# Plan\n\nFeature returns 2; feature_test.go shows it.\n"), // 4: the phase's artifact
		tool(walk, "effort_finish", map[string]any{"token": "{{step.1.token}}"}),                       // 5: skips three phases
		say(walk, "finish from plan: {{last.error}}"),                                                  // 6
		tool(walk, "effort_continue", map[string]any{"token": "{{step.1.token}}",
			"proof": map[string]any{"plan_summary": "Feature returns 2"}, "notes": "plan: feature.go and feature_test.go"}), // 7
		tool(walk, "effort_continue", map[string]any{"token": "{{step.1.token}}",
			"proof": map[string]any{"plan_summary": "Feature returns 2"}}), // 8: replayed
		say(walk, "the replayed token: {{last.error}}"), // 9
		write(walk, "feature_test.go", featureTest),     // 10: test-first's evidence
		shell(walk, "go test ./..."),                    // 11: fails, as it must here
		tool(walk, "effort_continue", map[string]any{"token": "{{step.7.token}}",
			"proof": map[string]any{"failing_test": "TestFeature: feature_test.go:6: Feature() != 2"}}), // 12
		write(walk, "feature.go", featureBug), // 13: implement
		tool(walk, "effort_log", map[string]any{"text": "Feature is a plain func: nothing to keep between calls"}), // 14
		tool(walk, "effort_continue", map[string]any{"token": "{{step.12.token}}"}),                                // 15
		tool(walk, "effort_finish", finish),                         // 16: nothing checked yet
		say(walk, "finish before the check: {{last.error}}"),        // 17
		shell(walk, "go test ./..."),                                // 18: exits 1
		tool(walk, "effort_finish", finish),                         // 19
		say(walk, "finish after a failing go test: {{last.error}}"), // 20
		write(walk, "feature.go", featureFix),                       // 21: verify allows write_file
		shell(walk, "go test ./..."),                                // 22
		shell(walk, "go vet ./..."),                                 // 23
		write(walk, "1_IMPLEMENT.md", debriefOne),                   // 24: the debrief, verify's artifact
		tool(walk, "effort_finish", map[string]any{"token": "{{step.15.token}}",
			"proof": map[string]any{"tests_run": 1}, "notes": "Feature returns 2"}), // 25
		say(walk, "effort {{last.effort}} is {{last.state}}"),                         // 26
		tool(again, "effort_start", map[string]any{"dir": dir, "skill": "implement"}), // 27
		say(again, "effort {{last.effort}} is #{{last.ordinal}}"),                     // 28
		{"result": "done"},
	}
	cfg, err := json.Marshal(map[string]any{"env": env, "script": script})
	if err != nil {
		t.Fatal(err)
	}
	c.ok("new", "alice", "--backend", "mock", "--config", string(cfg))

	var res api.RunResult
	if err := json.Unmarshal([]byte(c.ok("serve", "alice", "walk")), &res); err != nil {
		t.Fatal(err)
	}
	logs := c.ok("logs", res.RunID)
	for _, want := range []string{
		"plan refused the write: phase plan of skill implement does not allow write_file: write_file is denied by \"write_file\"",
		"finish from plan: effort-1 is in phase 1 of 4, plan: phases are walked in order",
		"the replayed token: already used: the effort is at phase 2 of 4, test-first",
		"finish before the check: effort-1 cannot leave phase 4 of 4, verify:",
		"- evidence: verify needs a shell command matching `go test ./...` that exited 0 (alone or in a chain joined by &&, not in a pipeline or after ; or ||) in this phase; none was observed",
		"- evidence: verify needs a shell command matching `go vet ./...` that exited 0",
		"finish after a failing go test: effort-1 cannot leave phase 4 of 4, verify:",
		"in this phase; the last was `go test ./...`, which exited 1\n",
		"effort effort-1 is finished",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the walk's transcript lacks %q:\n%s", want, logs)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "feature.go")); err != nil || string(b) != featureFix {
		t.Errorf("feature.go = %q, %v; want the fix written in verify (plan's write refused)", b, err)
	}
	for file, want := range map[string]string{
		"1_IMPLEMENT_PLAN.md": "Feature returns 2",
		"1_IMPLEMENT_LOG.md":  "Z Feature is a plain func: nothing to keep between calls\n",
		"1_IMPLEMENT.md":      debriefOne,
	} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s = %q, %v; want %q in it", file, b, err, want)
		}
	}
	var shown api.EffortShow
	if err := json.Unmarshal([]byte(c.ok("effort", "show", "effort-1", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.State != "finished" || len(shown.History) == 0 {
		t.Fatalf("effort-1 = %+v", shown)
	}
	// What met verify's evidence: the green go test and go vet, not the red one.
	last := shown.History[len(shown.History)-1]
	var met []struct {
		Subject string
		Exit    *int
	}
	b, _ := json.Marshal(last.Evidence)
	if err := json.Unmarshal(b, &met); err != nil || last.PhaseName != "verify" || len(met) != 2 ||
		met[0].Subject != "go test ./..." || met[0].Exit == nil || *met[0].Exit != 0 || met[1].Subject != "go vet ./..." {
		t.Errorf("verify's checkpoint = %+v, evidence %s", last, b)
	}

	// Effort 2 on the same directory starts with effort 1's debrief.
	if err := json.Unmarshal([]byte(c.ok("serve", "alice", "again")), &res); err != nil {
		t.Fatal(err)
	}
	logs = c.ok("logs", res.RunID)
	for _, want := range []string{"effort effort-2 is #2", "implement #2 on " + dir, "what effort 1 (implement) left:", "The first version returned 1: go test caught it in verify."} {
		if !strings.Contains(logs, want) {
			t.Errorf("effort 2's start lacks %q:\n%s", want, logs)
		}
	}
}

// tsEffortScript walks an effort as an outside agent with the official
// TypeScript MCP client: effort_start, effort_continue with the proof,
// the same token again, effort_status. It prints one JSON object.
const tsEffortScript = `import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
const [url, token, dir] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer " + token } } });
const client = new Client({ name: "effort-e2e", version: "1" });
await client.connect(transport);
const call = async (name, args) => {
  const res = await client.callTool({ name, arguments: args });
  return { isError: !!res.isError, text: res.content.map((c) => c.text).join(""), result: res.structuredContent ?? null };
};
const tools = (await client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith("effort_"));
const start = await call("effort_start", { dir, skill: "implement" });
const t1 = start.result?.token;
const noToken = await call("effort_continue", { token: "", proof: { plan_summary: "add Feature" } });
const noProof = await call("effort_continue", { token: t1, proof: {} });
const next = await call("effort_continue", { token: t1, proof: { plan_summary: "add Feature" }, notes: "from the TypeScript client" });
const replayed = await call("effort_continue", { token: t1, proof: { plan_summary: "add Feature" } });
const status = await call("effort_status", {});
console.log(JSON.stringify({ tools, start, noToken, noProof, next, replayed, status }));
await client.close();
process.exit(0);
`

// The official TypeScript MCP client drives an effort as an outside
// agent (issue 43): effort_start answers the first phase and a token;
// effort_continue without the token or the proof is refused, with them moves to phase
// 2 and answers a new token; the first token again is refused as used;
// effort_status shows phase 2 and its token.
func TestE2EEffortAcceptanceTypeScriptClient(t *testing.T) {
	t.Parallel()
	modules := tsModules(t)
	c := newCLI(t)
	installExample(t, c)
	c.startDaemon()
	c.ok("new", "outside", "--backend", "external")
	url, token := c.agentToken("outside")
	dir := realPath(t, t.TempDir())

	out, err := exec.Command("node", tsScript(t, modules, "effort.mjs", tsEffortScript), url, token, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("effort script: %v: %s", err, out)
	}
	type answer struct {
		IsError bool
		Text    string
		Result  *tools.EffortResult
	}
	var got struct {
		Tools                                           []string
		Start, NoToken, NoProof, Next, Replayed, Status answer
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("effort script: %q: %v", out, err)
	}
	if want := []string{"effort_continue", "effort_finish", "effort_log", "effort_start", "effort_status"}; !slicesEqual(sorted(got.Tools), want) {
		t.Errorf("the effort tools listed = %q, want %q", got.Tools, want)
	}
	s := got.Start
	if s.IsError || s.Result == nil || s.Result.Token == "" || s.Result.Ordinal != 1 || s.Result.Phase == nil || s.Result.Phase.Name != "plan" {
		t.Fatalf("effort_start = %+v", s)
	}
	if !got.NoToken.IsError || !strings.Contains(got.NoToken.Text, "needs the token") {
		t.Errorf("effort_continue without the token = %+v, want refused", got.NoToken)
	}
	if !got.NoProof.IsError || !strings.Contains(got.NoProof.Text, "plan_summary") {
		t.Errorf("effort_continue without the proof = %+v, want refused naming plan_summary", got.NoProof)
	}
	n := got.Next
	if n.IsError || n.Result == nil || n.Result.Phase == nil || n.Result.Phase.Name != "test-first" || n.Result.Token == "" || n.Result.Token == s.Result.Token {
		t.Fatalf("effort_continue with the proof = %+v", n)
	}
	if r := got.Replayed; !r.IsError || !strings.Contains(r.Text, "already used: the effort is at phase 2 of 4, test-first") {
		t.Errorf("the replayed token = %+v, want refused as used", r)
	}
	st := got.Status
	if st.IsError || st.Result == nil || st.Result.Phase == nil || st.Result.Phase.Name != "test-first" || st.Result.Token != n.Result.Token ||
		!slicesEqual(st.Result.Phase.Missing, []string{`{file: "*_test.go"}`}) {
		t.Errorf("effort_status = %+v, want test-first, its token and the file evidence missing", st)
	}
	var shown api.EffortShow
	if err := json.Unmarshal([]byte(c.ok("effort", "show", "--agent", "outside@global", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.PhaseName != "test-first" || len(shown.History) < 2 || shown.History[1].Notes != "from the TypeScript client" {
		t.Errorf("effort show = %+v", shown)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// lastToken is the last continue token of phase (counted from 0) of
// effort-1 the scripted model was shown, in a tool's result or a run's
// prompt.
func lastToken(t *testing.T, reqs []modelRequest, phase int) string {
	t.Helper()
	re := regexp.MustCompile(`awe1\.effort-1\.` + strconv.Itoa(phase) + `\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)
	for i := len(reqs) - 1; i >= 0; i-- {
		if all := re.FindAllString(string(reqs[i].RawBody), -1); len(all) > 0 {
			return all[len(all)-1]
		}
	}
	t.Fatalf("the model was shown no token of phase %d", phase+1)
	return ""
}

// Issue 43's acceptance with the sdk backend against the scripted model,
// a run per phase, each picking the effort up where the last left it:
// the model starts the effort; its write_file in plan is refused and the
// refusal is in the next request it gets, while the plan artifact is
// written; it continues with the token it was shown; writes the test;
// implements and logs; in verify its effort_finish is refused, naming
// the missing go test and go vet, which it reads; then run_shell runs
// `go test ./...` and `go vet ./...` (the stub go on its PATH), both
// observed exiting 0, it writes the debrief and the finish is accepted.
func TestE2EEffortAcceptanceOfTheSDKBackend(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	installExample(t, c)
	m := startModel(t, false)
	c.startModelDaemon(m)
	dir := filepath.Join(realPath(t, c.home), "workspaces", "global", "main", "dev")
	env := goProject(t, dir)
	cfg, err := json.Marshal(map[string]any{"env": env})
	if err != nil {
		t.Fatal(err)
	}
	c.ok("new", "dev", "--backend", "sdk", "--model", "anthropic/claude-sonnet-4-5", "--config", string(cfg))
	call := func(name string, args map[string]any) modelTurn {
		return modelTurn{"Tools": []map[string]any{{"Name": name, "Args": args}}}
	}
	runs := 0
	run := func(message string, turns ...modelTurn) string {
		t.Helper()
		for _, turn := range turns {
			m.add(t, turn)
		}
		c.ok("send", "dev", message)
		runs++
		return c.lastRunLogs("dev", runs)
	}
	const planRefusal = "phase plan of skill implement does not allow write_file: write_file is denied by"

	// Run 1, plan.
	logs := run("plan Feature",
		call("effort_start", map[string]any{"dir": dir, "skill": "implement"}),
		call("write_file", map[string]any{"path": "feature.go", "content": featureFix}),
		call("write_file", map[string]any{"path": "1_IMPLEMENT_PLAN.md", "content": "# Plan\n\nFeature returns 2.\n"}),
		modelTurn{"Text": "planned"})
	reqs := m.requests(t)
	if len(reqs) != 4 {
		t.Fatalf("run 1: the model got %d requests, want 4:\n%s", len(reqs), logs)
	}
	if body := string(reqs[2].RawBody); !strings.Contains(body, planRefusal) {
		t.Errorf("the request after the refused write lacks the phase's reason:\n%s", body)
	}
	if _, err := os.Stat(filepath.Join(dir, "feature.go")); err == nil {
		t.Error("feature.go was written in phase plan")
	}

	// Run 2, test-first: the run's prompt says where the effort is.
	logs = run("write the test",
		call("effort_continue", map[string]any{"token": lastToken(t, reqs, 0), "proof": map[string]any{"plan_summary": "Feature returns 2"},
			"notes": "plan: feature.go and its test"}),
		call("write_file", map[string]any{"path": "feature_test.go", "content": featureTest}),
		modelTurn{"Text": "test written"})
	reqs = m.requests(t)
	if prompt := string(reqs[4].RawBody); !strings.Contains(prompt, "Phase 1 of 4: plan") || !strings.Contains(prompt, "1_IMPLEMENT_PLAN.md") {
		t.Errorf("run 2's first request lacks the effort's phase:\n%s", prompt)
	}

	// Run 3, implement.
	run("implement it",
		call("effort_continue", map[string]any{"token": lastToken(t, reqs, 1), "proof": map[string]any{"failing_test": "TestFeature: feature_test.go:6"}}),
		call("write_file", map[string]any{"path": "feature.go", "content": featureFix}),
		call("effort_log", map[string]any{"text": "kept Feature a plain func"}),
		modelTurn{"Text": "implemented"})
	reqs = m.requests(t)
	if prompt := string(reqs[7].RawBody); !strings.Contains(prompt, "Phase 2 of 4: test-first") || !strings.Contains(prompt, "plan: feature.go and its test") {
		t.Errorf("run 3's first request lacks the phase and the notes so far:\n%s", prompt)
	}

	// Run 4, verify.
	logs = run("verify it",
		call("effort_continue", map[string]any{"token": lastToken(t, reqs, 2)}),
		call("effort_finish", map[string]any{"proof": map[string]any{"tests_run": 1}}),
		call("run_shell", map[string]any{"command": "go test ./..."}),
		call("run_shell", map[string]any{"command": "go vet ./..."}),
		call("write_file", map[string]any{"path": "1_IMPLEMENT.md", "content": debriefOne}),
		call("effort_finish", map[string]any{"proof": map[string]any{"tests_run": 1}, "notes": "Feature returns 2"}),
		modelTurn{"Text": "verified"})
	reqs = m.requests(t)
	if len(reqs) != 18 {
		t.Fatalf("the model got %d requests, want 18:\n%s", len(reqs), logs)
	}
	if body := string(reqs[13].RawBody); !strings.Contains(body, "verify needs a shell command matching `go test ./...` that exited 0") ||
		!strings.Contains(body, "verify needs a shell command matching `go vet ./...` that exited 0") {
		t.Errorf("the request after the early finish lacks its refusal:\n%s", body)
	}
	var shown api.EffortShow
	if err := json.Unmarshal([]byte(c.ok("effort", "show", "effort-1", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.State != "finished" {
		t.Fatalf("effort-1 is %s after verify, want finished:\n%s", shown.State, logs)
	}
	last := shown.History[len(shown.History)-1]
	if b, _ := json.Marshal(last.Evidence); !strings.Contains(string(b), `"subject":"go test ./..."`) || !strings.Contains(string(b), `"subject":"go vet ./..."`) {
		t.Errorf("verify's evidence = %s", b)
	}
	for file, want := range map[string]string{"1_IMPLEMENT_PLAN.md": "Feature returns 2", "1_IMPLEMENT_LOG.md": "Z kept Feature a plain func\n", "1_IMPLEMENT.md": debriefOne} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s = %q, %v; want %q in it", file, b, err, want)
		}
	}
}
