package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/agents"
	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/workflow"
)

// A workflow that names its documents folder gets its documents there,
// whether an agent writes through MCP (team_doc_write) or the user through
// the HTTP API the CLI's `doc write` calls; names cannot leave the folder,
// and a second instance cannot share it.
func TestWorkflowDocumentsDir(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.yaml")
	saveFile(t, file, `name: notes
agents:
  writer:
    backend: mock
    config: {script: [{tool: team_doc_write, args: {file: notes.md, content: "via MCP"}}]}
context:
  documents: {provider: file, dir: ./my-docs/}
kickoff: "@writer go"
`)
	ctx, c := context.Background(), th.client()
	if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	target := api.Target{Workflow: "notes", Tag: "main"}
	waitWorkflow(t, th, target, "idle after the write", func(w api.Workflow, _ []api.Agent) bool {
		return w.Progress != nil && w.Progress.Idle && w.Progress.Runs > 0
	})
	docs := filepath.Join(dir, "my-docs")
	if b, err := os.ReadFile(filepath.Join(docs, "notes.md")); err != nil || string(b) != "via MCP" {
		t.Errorf("my-docs/notes.md after team_doc_write = %q, %v", b, err)
	}
	if err := c.DocWrite(ctx, target, "plan.md", api.DocumentWrite{Content: "via HTTP"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(docs, "plan.md")); err != nil || string(b) != "via HTTP" {
		t.Errorf("my-docs/plan.md after doc write = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".workflow")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".workflow/ beside the file: %v; want the documents only in my-docs", err)
	}
	if err := c.DocWrite(ctx, target, "../escape.md", api.DocumentWrite{Content: "x"}); err == nil {
		t.Error("writing ../escape.md succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "escape.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("escape.md beside my-docs: %v", err)
	}

	_, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file, Tag: "two"})
	if api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "already used by @notes:main") || !strings.Contains(err.Error(), "${{ workflow.tag }}") {
		t.Errorf("a second tag on the same documents folder: %v", err)
	}
}

// The file docs plugin (agent-worker-docs-file, preferred when installed)
// writes into the workflow's folder too: the daemon passes it on.
func TestDocsPluginWritesInWorkflowDir(t *testing.T) {
	t.Parallel()
	th, plugins := pluginHost(t, runner.SupervisorConfig{})
	docsBin := testkit.Install(t, testkit.Build(t, "cmd/agent-worker-docs-file"), plugins, "agent-worker-docs-file")
	waitPlugins(t, th, "the file docs plugin", func(ps []api.Plugin) bool { p := find(ps, "file"); return p != nil && p.Error == "" })
	dir := t.TempDir()
	file := filepath.Join(dir, "wf.yaml")
	saveFile(t, file, "name: wf\nagents: {a: {backend: mock}}\ncontext: {documents: {provider: file, dir: 'docs/${{ workflow.tag }}'}}\n")
	ctx, c := context.Background(), th.client()
	for _, tag := range []string{"one", "two"} { // the tag in the folder keeps instances apart
		if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file, Tag: tag}); err != nil {
			t.Fatal(err)
		}
		if err := c.DocWrite(ctx, api.Target{Workflow: "wf", Tag: tag}, "notes.md", api.DocumentWrite{Content: "in " + tag}); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "docs", tag, "notes.md")); err != nil || string(b) != "in "+tag {
			t.Errorf("docs/%s/notes.md = %q, %v", tag, b, err)
		}
	}
	if len(allProcesses(t, docsBin)) == 0 {
		t.Error("no docs plugin process: the built-in provider wrote the documents")
	}
}

// Workflow files and system prompts over 1 MiB are refused with the file
// named, at start and on reload (which keeps the last good config).
func TestSizeLimitsOnEveryPath(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	ctx, c := context.Background(), th.client()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	saveFile(t, big, "agents: {a: {backend: mock}}\n#"+strings.Repeat("x", workflow.MaxFileBytes))
	_, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: big})
	if api.ErrorCode(err) != api.CodeTooLarge || !strings.Contains(err.Error(), "workflow file "+big) || !strings.Contains(err.Error(), "the limit is 1 MiB") {
		t.Errorf("start with a 1 MiB+ file: %v", err)
	}

	file := filepath.Join(dir, "team.yaml")
	saveFile(t, file, teamV1)
	if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	saveFile(t, file, teamV1+"#"+strings.Repeat("x", workflow.MaxFileBytes))
	target := api.Target{Workflow: "team", Tag: "main"}
	w := waitWorkflow(t, th, target, "the reload error", func(w api.Workflow, _ []api.Agent) bool { return w.Error != "" })
	if !strings.Contains(w.Error, "workflow file "+file) || !strings.Contains(w.Error, "the limit is 1 MiB") || !strings.Contains(w.Error, "last good config") {
		t.Errorf("reload of a 1 MiB+ file: %q", w.Error)
	}
	if a, err := c.GetAgent(ctx, api.Target{Agent: "alice", Workflow: "team", Tag: "main"}); err != nil || a.State == "stopped" {
		t.Errorf("alice after the refused edit: %+v, %v", a, err)
	}

	saveFile(t, filepath.Join(dir, "huge.md"), strings.Repeat("p", workflow.MaxSystemPromptBytes+1))
	prompt := filepath.Join(dir, "prompt.yaml")
	saveFile(t, prompt, "agents:\n  a:\n    backend: mock\n    system_prompt: huge.md\n")
	_, err = c.StartWorkflow(ctx, api.StartWorkflow{Path: prompt})
	if api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(err.Error(), "prompt.yaml:4:20: system_prompt file huge.md is 1048577 bytes") {
		t.Errorf("start with a 1 MiB+ prompt file: %v", err)
	}

	// POST /agents: the request body limit stops a huge prompt first; the
	// prompt's own limit holds for anything that gets past it.
	_, err = agents.FromSpec(api.AgentSpec{Name: "a", Backend: "mock", System: strings.Repeat("p", workflow.MaxSystemPromptBytes+1)}, th.catalog, "")
	if api.ErrorCode(err) != api.CodeTooLarge || !strings.Contains(err.Error(), "system prompt is 1048577 bytes; the limit is 1 MiB") {
		t.Errorf("agent spec with a 1 MiB+ prompt: %v", err)
	}
	if _, err := c.CreateAgent(ctx, api.AgentSpec{Name: "a", Backend: "mock", System: strings.Repeat("p", workflow.MaxSystemPromptBytes+1)}); api.ErrorCode(err) != api.CodeTooLarge {
		t.Errorf("POST /agents with a 1 MiB+ prompt: %v", err)
	}
}

// A 10,000-character name is a length error that names the limit, in a
// workflow file (at its line) and in a request, never a YAML error.
func TestLongNames(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	ctx, c := context.Background(), th.client()
	long := strings.Repeat("a", 10000)
	file := filepath.Join(t.TempDir(), "long.yaml")
	saveFile(t, file, "agents:\n  "+long+":\n    backend: mock\n")
	_, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file})
	if api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(err.Error(), "long.yaml:2: agent name \"aaaa") || !strings.Contains(err.Error(), "is 10000 characters; at most 64") {
		t.Errorf("workflow with a 10,000-character agent name: %.400v", err)
	}
	for name, spec := range map[string]api.AgentSpec{
		"agent":    {Name: long, Backend: "mock"},
		"workflow": {Name: "a", Backend: "mock", Workflow: long},
		"tag":      {Name: "a", Backend: "mock", Tag: long},
	} {
		_, err := c.CreateAgent(ctx, spec)
		if api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(err.Error(), name+" name \"aaaa") || !strings.Contains(err.Error(), "is 10000 characters; at most 64") || len(err.Error()) > 300 {
			t.Errorf("POST /agents with a 10,000-character %s name: %.400v", name, err)
		}
	}
	good := filepath.Join(t.TempDir(), "good.yaml")
	saveFile(t, good, teamV1)
	if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: good, Tag: long}); api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(err.Error(), "tag name \"aaaa") || len(err.Error()) > 300 {
		t.Errorf("a 10,000-character tag: %.300v", err)
	}
}
