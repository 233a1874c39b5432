package runner

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// The directories a spare's base layer grants come from the workflows' and
// agents' definitions, kept between spare starts: a new workflow or agent
// is in the next spare's base, and a workspace repository counts once its
// .git exists, without a change of definition.
func TestRunDirsFollowDefinitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "agent-worker.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := &Supervisor{db: db, log: hclog.NewNullLogger()}
	work, repo, extra := t.TempDir(), t.TempDir(), t.TempDir()
	if d := s.runDirs(ctx); slices.Contains(d.Write, work) {
		t.Fatalf("runDirs before the workflow = %+v", d)
	}
	if _, err := db.CreateWorkflow(ctx, store.Workflow{Name: "wf", Tag: "main", Workdir: work, WorkspaceRepo: repo}); err != nil {
		t.Fatal(err)
	}
	d := s.runDirs(ctx)
	if !slices.Contains(d.Write, work) {
		t.Errorf("runDirs after the workflow was created lacks its directory %s: %+v", work, d)
	}
	if slices.Contains(d.Read, filepath.Join(repo, ".git")) {
		t.Errorf("runDirs grants a .git that does not exist: %+v", d)
	}
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if d := s.runDirs(ctx); !slices.Contains(d.Read, filepath.Join(repo, ".git")) || !slices.Contains(d.Write, filepath.Join(repo, ".git", "objects")) {
		t.Errorf("runDirs once the repository's .git exists = %+v", d)
	}
	a := store.Agent{Name: "alice", Workflow: "wf", Tag: "main", Backend: "mock",
		Config: backend.AgentConfig{Sandbox: &backend.SandboxConfig{Write: []string{extra}}}}
	if _, err := db.CreateAgent(ctx, a); err != nil {
		t.Fatal(err)
	}
	if d := s.runDirs(ctx); !slices.Contains(d.Write, extra) {
		t.Errorf("runDirs after an agent with its own sandbox path lacks %s: %+v", extra, d)
	}
	if err := db.DeleteWorkflow(ctx, "wf", "main"); err != nil {
		t.Fatal(err)
	}
	if d := s.runDirs(ctx); slices.Contains(d.Write, work) || slices.Contains(d.Write, extra) {
		t.Errorf("runDirs after the workflow was deleted still grants its paths: %+v", d)
	}
}
