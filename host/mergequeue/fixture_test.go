package mergequeue

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/host/worktrees"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// The git fixture of host/worktrees' tests, with the merge queue handed
// to the worktrees as the daemon does.

// The git helpers of these tests are testkit's.
var (
	needGit = testkit.NeedGit
	sh      = testkit.Git
	newRepo = testkit.NewRepo
	write   = testkit.WriteFile
	commit  = testkit.Commit
)

type fixture struct {
	wt   *worktrees.Service
	svc  *Service
	db   *store.DB
	team *team.Service
	repo string
	wf   store.Workflow
	home string
}

// newFixture is a store with workflow review:main on a git workspace of a
// fresh repository, with agents alice, bob and the planner lead
// (can_spawn).
func newFixture(t *testing.T) *fixture {
	t.Helper()
	repo := newRepo(t)
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tm := team.New(team.Config{DB: db, Logger: hclog.NewNullLogger()})
	wf, err := db.SaveWorkflow(t.Context(), store.Workflow{Name: "review", Tag: "main", Workdir: repo, WorkspaceRepo: repo, WorkspaceBase: "main", State: api.WorkflowRunning})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []store.Agent{{Name: "alice"}, {Name: "bob"}, {Name: "lead", CanSpawn: true, MaxSpawned: 5}} {
		a.Workflow, a.Tag, a.Backend = "review", "main", "mock"
		if _, err := db.CreateAgent(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{db: db, team: tm, repo: repo, wf: wf, home: t.TempDir()}
	f.wt, f.svc = f.services()
	return f
}

// services are a worktrees service and its merge queue on f's store and
// home, as a (re)started daemon builds them.
func (f *fixture) services() (*worktrees.Service, *Service) {
	wt := worktrees.New(worktrees.Config{DB: f.db, Team: f.team, Home: f.home, Log: hclog.NewNullLogger()})
	return wt, New(Config{DB: f.db, Team: f.team, Worktrees: wt, Log: hclog.NewNullLogger()})
}

func (f *fixture) key(name string) store.AgentKey {
	return store.AgentKey{Workflow: "review", Tag: "main", Name: name}
}

// dir makes (or finds) name's worktree as a run would.
func (f *fixture) dir(t *testing.T, name string) string {
	t.Helper()
	dir, ok, err := f.wt.ProjectDir(t.Context(), f.wf, name)
	if err != nil || !ok {
		t.Fatalf("ProjectDir(%s) = %q, %v, %v", name, dir, ok, err)
	}
	return dir
}

func (f *fixture) scope() store.Scope { return store.Scope{Workflow: "review", Tag: "main"} }

// lines are the channel's system lines.
func (f *fixture) lines(t *testing.T) []string {
	t.Helper()
	ms, err := f.team.Read(t.Context(), f.scope(), team.SenderUser, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		if m.Kind == store.KindSystem {
			out = append(out, m.Content)
		}
	}
	return out
}

// status is name's worktree as worktree_status shows it.
func (f *fixture) status(t *testing.T, name string) tools.Worktree {
	t.Helper()
	ws, err := f.wt.Status(t.Context(), f.scope(), name)
	if err != nil || len(ws) != 1 {
		t.Fatalf("Status(%s) = %+v, %v", name, ws, err)
	}
	return ws[0]
}
