package worktrees

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// The git helpers of these tests are testkit's.
var (
	needGit = testkit.NeedGit
	sh      = testkit.Git
	newRepo = testkit.NewRepo
	write   = testkit.WriteFile
	commit  = testkit.Commit
)

type fixture struct {
	svc  *Service
	db   *store.DB
	team *team.Service
	repo string
	wf   store.Workflow
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
	svc := New(Config{DB: db, Team: tm, Home: t.TempDir(), Log: hclog.NewNullLogger()})
	return &fixture{svc: svc, db: db, team: tm, repo: repo, wf: wf}
}

func (f *fixture) key(name string) store.AgentKey {
	return store.AgentKey{Workflow: "review", Tag: "main", Name: name}
}

// dir makes (or finds) name's worktree as a run would.
func (f *fixture) dir(t *testing.T, name string) string {
	t.Helper()
	dir, ok, err := f.svc.ProjectDir(t.Context(), f.wf, name)
	if err != nil || !ok {
		t.Fatalf("ProjectDir(%s) = %q, %v, %v", name, dir, ok, err)
	}
	return dir
}

func (f *fixture) scope() store.Scope { return store.Scope{Workflow: "review", Tag: "main"} }

// status is name's worktree as worktree_status shows it.
func (f *fixture) status(t *testing.T, name string) tools.Worktree {
	t.Helper()
	ws, err := f.svc.Status(t.Context(), f.scope(), name)
	if err != nil || len(ws) != 1 {
		t.Fatalf("Status(%s) = %+v, %v", name, ws, err)
	}
	return ws[0]
}

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

// A worktree is made from the base on first use, outside the repository,
// on the agent's branch, and found again (by a new Service too, as after
// a restart) rather than made twice.
func TestProjectDirMakesAndReuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if dir, ok, err := f.svc.ProjectDir(t.Context(), store.Workflow{Name: "plain", Tag: "main"}, "alice"); ok || dir != "" || err != nil {
		t.Errorf("a workflow without a workspace: %q, %v, %v; want the default", dir, ok, err)
	}
	if got := f.status(t, "alice"); got.State != tools.WorktreeNone || got.Path != "" {
		t.Errorf("before the first run: %+v, want state none", got)
	}
	dir := f.dir(t, "alice")
	if want := filepath.Join(f.svc.root, "review", "main", "alice"); dir != want {
		t.Errorf("dir = %s, want %s", dir, want)
	}
	if got := sh(t, dir, "rev-parse", "--abbrev-ref", "HEAD"); got != "aw/review/main/alice" {
		t.Errorf("worktree on %s, want aw/review/main/alice", got)
	}
	if got := sh(t, f.repo, "status", "--porcelain"); got != "" {
		t.Errorf("the user's tree shows %q after a worktree was made; want nothing", got)
	}
	write(t, filepath.Join(dir, "scratch.txt"), "work in progress\n")
	if again := f.dir(t, "alice"); again != dir {
		t.Errorf("second ProjectDir = %s, want %s", again, dir)
	}
	restarted := New(Config{DB: f.db, Team: f.team, Home: filepath.Dir(f.svc.root), Log: hclog.NewNullLogger()})
	if again, _, err := restarted.ProjectDir(t.Context(), f.wf, "alice"); err != nil || again != dir {
		t.Errorf("after a restart: %s, %v; want %s", again, err, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "scratch.txt")); err != nil {
		t.Errorf("reusing the worktree lost its files: %v", err)
	}
	got := f.status(t, "alice")
	if got.State != tools.WorktreeActive || got.Path != dir || got.Ahead != 0 || got.Behind != 0 ||
		!cmp.Equal(got.Changed, []tools.FileChange{{Status: "??", Path: "scratch.txt"}}) || got.LastCommit == nil || got.LastCommit.Subject != "first" {
		t.Errorf("status = %+v", got)
	}

	// A directory in the way is named, not overwritten.
	write(t, filepath.Join(f.svc.Path(f.key("bob")), "mine.txt"), "x")
	if _, _, err := f.svc.ProjectDir(t.Context(), f.wf, "bob"); api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "is in the way") {
		t.Errorf("a directory in the way: %v, want a conflict saying so", err)
	}
	// A worktree deleted by hand is made again on its branch.
	sh(t, dir, "add", "scratch.txt")
	sh(t, dir, "commit", "-q", "-m", "scratch")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	f.dir(t, "alice")
	if _, err := os.Stat(filepath.Join(dir, "scratch.txt")); err != nil {
		t.Errorf("a worktree made again lost the branch's commit: %v", err)
	}
}

// Two agents commit in their own worktrees; the planner integrates both
// into main with merge commits, and the user's checkout of main follows.
func TestIntegrate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b := f.dir(t, "alice"), f.dir(t, "bob")
	commit(t, a, "alice's part", map[string]string{"a.txt": "from alice\n"})
	commit(t, b, "bob's part", map[string]string{"b.txt": "from bob\n"})
	if st := f.status(t, "alice"); st.Ahead != 1 || st.Behind != 0 || st.LastCommit.Subject != "alice's part" {
		t.Errorf("alice's status = %+v", st)
	}

	res, err := f.svc.Integrate(t.Context(), f.key("alice"), "", "lead", "")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Merged || res.Target != "main" || !cmp.Equal(res.Files, []string{"a.txt"}) {
		t.Errorf("integrate alice = %+v", res)
	}
	if parents := strings.Fields(sh(t, f.repo, "log", "-1", "--format=%P", "main")); len(parents) != 2 {
		t.Errorf("main's head has parents %v, want a merge commit", parents)
	}
	if _, err := f.svc.Integrate(t.Context(), f.key("bob"), "", team.SenderUser, "main"); err != nil {
		t.Fatal(err)
	}
	// main is checked out in the user's tree, which followed, clean.
	if got := sh(t, f.repo, "status", "--porcelain"); got != "" {
		t.Errorf("user's tree after integrate: %q, want clean", got)
	}
	for _, name := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(f.repo, name)); err != nil {
			t.Errorf("user's checkout of main lacks %s: %v", name, err)
		}
	}
	if st := f.status(t, "alice"); st.Ahead != 0 || st.Behind != 3 {
		t.Errorf("alice after both merges: ahead %d behind %d, want 0 and 3 (two merges and bob's commit)", st.Ahead, st.Behind)
	}
	// Again: nothing to merge.
	if res, err := f.svc.Integrate(t.Context(), f.key("alice"), "", "lead", ""); err != nil || res.Merged {
		t.Errorf("integrating again = %+v, %v; want nothing merged", res, err)
	}
	lines := f.lines(t)
	if len(lines) != 2 || !strings.Contains(lines[0], "alice's branch aw/review/main/alice was integrated into main by lead") ||
		!strings.Contains(lines[1], "by user") {
		t.Errorf("channel = %q", lines)
	}
}

// A conflict leaves the target as it was and names the files.
func TestIntegrateConflict(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b := f.dir(t, "alice"), f.dir(t, "bob")
	commit(t, a, "alice edits", map[string]string{"README": "alice's\n", "x.txt": "x"})
	commit(t, b, "bob edits", map[string]string{"README": "bob's\n", "x.txt": "y"})
	if _, err := f.svc.Integrate(t.Context(), f.key("alice"), "", "lead", ""); err != nil {
		t.Fatal(err)
	}
	before := sh(t, f.repo, "rev-parse", "main")
	_, err := f.svc.Integrate(t.Context(), f.key("bob"), "", "lead", "")
	if api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "conflicts in 2 files: README, x.txt; main is unchanged") {
		t.Errorf("conflicting integrate: %v", err)
	}
	if after := sh(t, f.repo, "rev-parse", "main"); after != before {
		t.Errorf("main moved from %s to %s on a conflict", before, after)
	}
	if got := sh(t, f.repo, "status", "--porcelain"); got != "" {
		t.Errorf("user's tree after a conflict: %q", got)
	}
}

// The user's checkout with uncommitted changes is not moved under them;
// another branch, checked out nowhere, is moved by its ref alone.
func TestIntegrateAroundTheUsersTree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.dir(t, "alice")
	commit(t, a, "alice's part", map[string]string{"a.txt": "a"})
	write(t, filepath.Join(f.repo, "README"), "edited by the user\n")
	before := sh(t, f.repo, "rev-parse", "main")
	_, err := f.svc.Integrate(t.Context(), f.key("alice"), "", "lead", "")
	if api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "which has uncommitted changes (README)") {
		t.Errorf("integrate into a dirty checkout: %v", err)
	}
	if after := sh(t, f.repo, "rev-parse", "main"); after != before {
		t.Errorf("main moved under a dirty checkout")
	}
	if got := sh(t, f.repo, "status", "--porcelain"); got != "M README" {
		t.Errorf("user's changes: %q, want their README edit alone", got)
	}

	sh(t, f.repo, "branch", "release")
	res, err := f.svc.Integrate(t.Context(), f.key("alice"), "", "lead", "release")
	if err != nil || !res.Merged {
		t.Fatalf("integrate into release: %+v, %v", res, err)
	}
	if got := sh(t, f.repo, "rev-parse", "release"); got != res.Commit {
		t.Errorf("release = %s, want the merge %s", got, res.Commit)
	}
	if got := sh(t, f.repo, "status", "--porcelain"); got != "M README" {
		t.Errorf("user's tree after integrating into release: %q", got)
	}
	for target, want := range map[string]string{"nope": "branch nope does not exist", "-x": "may not start with -", "aw/review/main/alice": "into itself"} {
		if _, err := f.svc.Integrate(t.Context(), f.key("alice"), "", "lead", target); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("target %q: %v, want %q", target, err, want)
		}
	}
	if _, err := f.svc.Integrate(t.Context(), f.key("bob"), "", "lead", ""); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("bob has not run: %v, want not found", err)
	}
}

// Only planners and the user integrate or discard.
func TestPermission(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	commit(t, f.dir(t, "alice"), "work", map[string]string{"a.txt": "a"})
	before := sh(t, f.repo, "rev-parse", "main")
	if _, err := f.svc.Integrate(t.Context(), f.key("alice"), "", "bob", ""); api.ErrorCode(err) != api.CodePermission ||
		!strings.Contains(err.Error(), "bob may not integrate worktrees: only the user and agents with can_spawn: true may") {
		t.Errorf("integrate by bob: %v", err)
	}
	if _, err := f.svc.Discard(t.Context(), f.key("alice"), "", "alice", "mine", true); api.ErrorCode(err) != api.CodePermission {
		t.Errorf("discard by alice: %v", err)
	}
	if after := sh(t, f.repo, "rev-parse", "main"); after != before || f.status(t, "alice").Ahead != 1 {
		t.Errorf("a refused call changed something")
	}
}

// Discard refuses uncommitted changes unless forced, then removes the
// worktree and the branch and says how to get the work back.
func TestDiscard(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dir := f.dir(t, "alice")
	commit(t, dir, "work", map[string]string{"a.txt": "a"})
	write(t, filepath.Join(dir, "wip.txt"), "unsaved")
	_, err := f.svc.Discard(t.Context(), f.key("alice"), "", "lead", "wrong approach", false)
	if api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "1 uncommitted change (wip.txt)") {
		t.Errorf("discard with changes: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "wip.txt")); err != nil {
		t.Errorf("a refused discard lost the change: %v", err)
	}
	if _, err := f.svc.Discard(t.Context(), f.key("alice"), "", "lead", " ", true); api.ErrorCode(err) != api.CodeInvalid {
		t.Errorf("discard without a reason: %v", err)
	}
	last := sh(t, dir, "rev-parse", "HEAD")
	res, err := f.svc.Discard(t.Context(), f.key("alice"), "", "lead", "wrong approach", true)
	if err != nil || res.LastCommit != last {
		t.Fatalf("forced discard = %+v, %v", res, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	if got := sh(t, f.repo, "branch", "--list", "aw/*"); got != "" {
		t.Errorf("branches left: %q", got)
	}
	if got := f.status(t, "alice"); got.State != tools.WorktreeNone {
		t.Errorf("after discard: %+v, want none (a fresh one comes with the next run)", got)
	}
	if lines := f.lines(t); len(lines) != 1 || !strings.Contains(lines[0], "discarded by lead: wrong approach (its last commit was "+last[:12]) {
		t.Errorf("channel = %q", lines)
	}
	if _, err := f.svc.Discard(t.Context(), f.key("alice"), "", "lead", "again", false); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("discarding nothing: %v", err)
	}
}

// When the workflow stops, a merged branch goes with its worktree; one
// with unmerged commits, or uncommitted changes, is kept and listed.
func TestReleaseKeepsUnmergedWork(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b, lead := f.dir(t, "alice"), f.dir(t, "bob"), f.dir(t, "lead")
	commit(t, a, "merged work", map[string]string{"a.txt": "a"})
	if _, err := f.svc.Integrate(t.Context(), f.key("alice"), "", "lead", ""); err != nil {
		t.Fatal(err)
	}
	commit(t, b, "unmerged work", map[string]string{"b.txt": "b"})
	write(t, filepath.Join(lead, "notes.txt"), "uncommitted")

	f.svc.Release(t.Context(), f.scope()) // a running workflow: nothing goes
	if ws, err := f.svc.Status(t.Context(), f.scope(), ""); err != nil || len(ws) != 3 {
		t.Fatalf("before the stop: %+v, %v", ws, err)
	}
	if err := f.db.SetWorkflowState(t.Context(), "review", "main", api.WorkflowStopped, ""); err != nil {
		t.Fatal(err)
	}
	f.svc.Release(t.Context(), f.scope())
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("alice's merged worktree is still there: %v", err)
	}
	ws, err := f.svc.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.Agent+" "+string(w.State)+": "+w.KeptBecause)
	}
	want := []string{"bob kept: 1 commit not merged into main", "lead kept: 1 uncommitted change"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kept worktrees (-want +got):\n%s", diff)
	}
	branches := strings.Fields(sh(t, f.repo, "branch", "--list", "aw/*", "--format=%(refname:short)"))
	if !slices.Equal(branches, []string{"aw/review/main/bob", "aw/review/main/lead"}) {
		t.Errorf("branches = %v", branches)
	}
	if got := sh(t, f.repo, "worktree", "list", "--porcelain"); strings.Contains(got, "/alice") {
		t.Errorf("git still lists alice's worktree:\n%s", got)
	}

	// Discarding the kept ones leaves nothing.
	for _, name := range []string{"bob", "lead"} {
		if _, err := f.svc.Discard(t.Context(), f.key(name), "", team.SenderUser, "done with it", true); err != nil {
			t.Fatal(err)
		}
	}
	if ws, err := f.svc.List(t.Context()); err != nil || len(ws) != 0 {
		t.Errorf("after discarding: %+v, %v", ws, err)
	}
}

// resolve refuses a directory outside any repository and a missing base at
// the workspace: line, and takes the current branch when base is absent.
func TestResolve(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	sh(t, repo, "checkout", "-q", "-b", "topic")
	inst := func(dir, base string) *workflow.Instance {
		return &workflow.Instance{Name: "review", Tag: "main", Path: filepath.Join(dir, "review.yaml"), Dir: dir,
			Agents: []workflow.Agent{{Name: "alice"}}, Workspace: &workflow.Workspace{Git: workflow.GitWorktree, Base: base, Line: 4}}
	}
	ctx := context.Background()
	resolve := func(ctx context.Context, inst *workflow.Instance, keep string) (store.Workspace, error) {
		return (*Service)(nil).Check(ctx, inst, store.Workflow{WorkspaceBase: keep})
	}
	if ws, err := resolve(ctx, inst(repo, ""), ""); err != nil || ws.Base != "topic" || ws.Repo != repo {
		t.Errorf("no base: %+v, %v; want the current branch topic", ws, err)
	}
	if ws, err := resolve(ctx, inst(repo, ""), "main"); err != nil || ws.Base != "main" {
		t.Errorf("no base on a reload: %+v, %v; want the kept main", ws, err)
	}
	sub := filepath.Join(repo, "team")
	write(t, filepath.Join(sub, "x"), "")
	if ws, err := resolve(ctx, inst(sub, "main"), ""); err != nil || ws.Repo != repo || ws.Base != "main" {
		t.Errorf("from a subdirectory: %+v, %v", ws, err)
	}
	if ws, err := resolve(ctx, &workflow.Instance{Dir: repo}, ""); err != nil || ws.Repo != "" || ws.Repos != nil {
		t.Errorf("no workspace: %+v, %v", ws, err)
	}
	plain := t.TempDir()
	_, err := resolve(ctx, inst(plain, ""), "")
	if want := filepath.Join(plain, "review.yaml") + ":4: workspace: git needs a git repository: " + plain + " is not one; run git init or remove workspace:"; err == nil || err.Error() != want {
		t.Errorf("not a repository: %v\nwant %s", err, want)
	}
	if _, err := resolve(ctx, inst(repo, "nope"), ""); err == nil || !strings.Contains(err.Error(), ":4: workspace: base branch nope does not exist in "+repo) {
		t.Errorf("missing base: %v", err)
	}
	sh(t, repo, "checkout", "-q", "--detach")
	if _, err := resolve(ctx, inst(repo, ""), ""); err == nil || !strings.Contains(err.Error(), "detached HEAD") {
		t.Errorf("detached: %v", err)
	}
}

// An agent removed from the store (`stop bob@review`) is known by its
// branch alone: its unmerged work is kept and listed, merged work goes.
func TestReleaseAfterAgentRemoved(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	commit(t, f.dir(t, "bob"), "unmerged", map[string]string{"b.txt": "b"})
	f.dir(t, "alice")
	for _, name := range []string{"alice", "bob"} {
		if err := f.db.DeleteAgent(t.Context(), f.key(name)); err != nil {
			t.Fatal(err)
		}
	}
	f.svc.Release(t.Context(), f.scope())
	ws, err := f.svc.Status(t.Context(), f.scope(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].Agent != "bob" || ws[0].State != tools.WorktreeKept || ws[1].Agent != "lead" || ws[1].State != tools.WorktreeNone {
		t.Errorf("after removing alice and bob: %+v", ws)
	}
	if _, err := os.Stat(f.svc.Path(f.key("alice"))); !os.IsNotExist(err) {
		t.Errorf("alice's worktree outlived her: %v", err)
	}
	// Integrating the kept branch tidies it away.
	if _, err := f.svc.Integrate(t.Context(), f.key("bob"), "", team.SenderUser, ""); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, f.repo, "branch", "--list", "aw/*"); got != "" {
		t.Errorf("branches after integrating bob's kept work: %q", got)
	}
}

// workspace.repos resolve from the workflow's directory: a plain one to
// its path, a git one to its top-level directory and base; a missing
// directory and one git repository named twice are refused at their line.
func TestResolveRepos(t *testing.T) {
	t.Parallel()
	dir, lib, app := t.TempDir(), t.TempDir(), newRepo(t)
	inst := func(repos ...workflow.Repo) *workflow.Instance {
		return &workflow.Instance{Name: "review", Tag: "main", Path: filepath.Join(dir, "review.yaml"), Dir: dir,
			Agents: []workflow.Agent{{Name: "alice"}}, Workspace: &workflow.Workspace{Line: 3, Repos: repos}}
	}
	rel, _ := filepath.Rel(dir, lib)
	ctx := t.Context()
	got, err := (*Service)(nil).Check(ctx, inst(workflow.Repo{Name: "lib", Path: rel, Line: 5}, workflow.Repo{Name: "app", Path: app, Git: workflow.GitWorktree, Write: true, Line: 6}), store.Workflow{})
	want := []store.WorkspaceRepo{{Name: "lib", Path: lib}, {Name: "app", Path: app, Write: true, Git: true, Top: app, Base: "main"}}
	if err != nil || got.Repo != "" || !slices.Equal(got.Repos, want) {
		t.Errorf("Check = %+v, %v; want repos %+v", got, err, want)
	}
	// A reload keeps the base a repository has unless the file names one.
	sh(t, app, "checkout", "-q", "-b", "topic")
	cur := store.Workflow{Repos: []store.WorkspaceRepo{{Name: "app", Base: "main"}}}
	if got, err := (*Service)(nil).Check(ctx, inst(workflow.Repo{Name: "app", Path: app, Git: workflow.GitWorktree, Line: 6}), cur); err != nil || got.Repos[0].Base != "main" {
		t.Errorf("reload: %+v, %v; want the kept base main", got, err)
	}
	_, err = (*Service)(nil).Check(ctx, inst(workflow.Repo{Name: "gone", Path: "nowhere", Line: 5}), store.Workflow{})
	if wantErr := filepath.Join(dir, "review.yaml") + ":5: workspace repository gone: " + filepath.Join(dir, "nowhere") + " is not a directory"; err == nil || !strings.HasPrefix(err.Error(), wantErr) {
		t.Errorf("missing directory: %v\nwant %s", err, wantErr)
	}
	_, err = (*Service)(nil).Check(ctx, inst(workflow.Repo{Name: "a", Path: app, Git: workflow.GitWorktree, Line: 5}, workflow.Repo{Name: "b", Path: filepath.Join(app, "."), Git: workflow.GitWorktree, Line: 6}), store.Workflow{})
	if err == nil || !strings.Contains(err.Error(), ":6: workspace repository b: "+app+" is the same git repository as repository a") {
		t.Errorf("one repository twice: %v", err)
	}
	_, err = (*Service)(nil).Check(ctx, inst(workflow.Repo{Name: "lib", Path: lib, Git: workflow.GitWorktree, Line: 5}), store.Workflow{})
	if err == nil || !strings.Contains(err.Error(), ":5: workspace repository lib: git needs a git repository") {
		t.Errorf("not a repository: %v", err)
	}
}
