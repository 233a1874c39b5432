package mergequeue

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/sandbox"
	"github.com/agent-worker/agent-worker/internal/testkit"
	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// checkScript fails when the parts/ files add up to 3 or more: each of
// alice's, bob's and carol's parts passes alone and with one other, and
// all three together are forbidden.
const checkScript = `#!/bin/sh
total=$(cat parts/* 2>/dev/null | awk '{s+=$1} END {print s+0}')
echo "parts add up to $total"
if [ "$total" -ge 3 ]; then echo "forbidden: the parts add up to $total (at most 2)" >&2; exit 1; fi
`

// queueFixture is newFixture with carol, check.sh on main and a workflow
// file whose workspace has checks: [sh check.sh], batch.
func queueFixture(t *testing.T, batch string) *fixture {
	t.Helper()
	return queueFixtureWith(t, `{git: worktree, base: main, checks: ["sh check.sh"], batch: `+batch+`}`)
}

// queueFixtureWith is queueFixture with workspace: ws.
func queueFixtureWith(t *testing.T, ws string) *fixture {
	t.Helper()
	f := newFixture(t)
	if _, err := f.db.CreateAgent(t.Context(), store.Agent{Name: "carol", Workflow: "review", Tag: "main", Backend: "mock"}); err != nil {
		t.Fatal(err)
	}
	commit(t, f.repo, "the check", map[string]string{"check.sh": checkScript})
	f.wf.SourcePath = filepath.Join(f.repo, "team.yaml")
	f.wf.ConfigYAML = "name: review\nworkspace: " + ws + "\nagents: {alice: {backend: mock}}\n"
	wf, err := f.db.SaveWorkflow(t.Context(), f.wf)
	if err != nil {
		t.Fatal(err)
	}
	f.wf = wf
	return f
}

// part commits name's part (worth 1) on its branch.
func (f *fixture) part(t *testing.T, name string) {
	t.Helper()
	commit(t, f.dir(t, name), name+" adds its part", map[string]string{"parts/" + name: "1\n"})
}

// integrate queues name's branch as the planner lead.
func (f *fixture) integrate(t *testing.T, name string) tools.IntegrateResult {
	t.Helper()
	res, err := f.wt.Integrate(t.Context(), f.key(name), "", "lead", "")
	if err != nil || !res.Queued || res.QueueID == "" {
		t.Fatalf("Integrate(%s) = %+v, %v; want it queued", name, res, err)
	}
	return res
}

// drain works one batch of every queue with entries waiting, one queue
// after the other, and reports whether it did anything: RunQueue's work
// without its goroutines, for tests that step the queue themselves.
func (s *Service) drain(ctx context.Context) bool {
	qs, err := s.db.PendingQueues(ctx)
	if err != nil {
		return false
	}
	worked := false
	for _, q := range qs {
		did, err := s.step(ctx, q)
		worked = worked || did && err == nil
	}
	return worked
}

// drain works the queue until it has nothing left, as RunQueue does.
func (f *fixture) drain(t *testing.T) {
	t.Helper()
	for i := 0; f.svc.drain(t.Context()); i++ {
		if i > 20 {
			t.Fatal("the queue does not empty")
		}
	}
}

func (f *fixture) entry(t *testing.T, id string) tools.QueueEntry {
	t.Helper()
	e, err := f.svc.QueueEntry(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// checkEveryCommit runs check.sh on every commit of main, as a user
// auditing the queue would.
func checkEveryCommit(t *testing.T, repo string) int {
	t.Helper()
	revs := strings.Fields(sh(t, repo, "rev-list", "main"))
	dir := filepath.Join(t.TempDir(), "audit")
	sh(t, repo, "worktree", "add", "--detach", "-q", dir, "main")
	for _, rev := range revs {
		sh(t, dir, "checkout", "-q", "--detach", rev)
		if out, err := exec.Command("sh", "-c", "cd "+dir+" && sh check.sh").CombinedOutput(); err != nil && fileAt(t, repo, rev, "check.sh") {
			t.Errorf("main holds %s, whose check fails: %s", rev, out)
		}
	}
	sh(t, repo, "worktree", "remove", "--force", dir)
	return len(revs)
}

func fileAt(t *testing.T, repo, rev, path string) bool {
	return exec.Command("git", "-C", repo, "cat-file", "-e", rev+":"+path).Run() == nil
}

// Three branches that each pass, two of them together too, but not all
// three: the batch fails, the bisection blames the third, the first two
// land, the third fails with the check's output in a message to carol
// and lead, and no commit of main fails the check.
func TestMergeQueueBisectsAFailingBatch(t *testing.T) {
	t.Parallel()
	f := queueFixture(t, "4")
	for _, name := range []string{"alice", "bob", "carol"} {
		f.part(t, name)
	}
	before := sh(t, f.repo, "rev-parse", "main")
	a, b, c := f.integrate(t, "alice"), f.integrate(t, "bob"), f.integrate(t, "carol")
	if c.Position != 2 || sh(t, f.repo, "rev-parse", "main") != before {
		t.Errorf("queued third with %d ahead; main moved: %v", c.Position, sh(t, f.repo, "rev-parse", "main") != before)
	}
	if w := f.status(t, "bob"); w.QueueID != b.QueueID || w.QueueState != api.QueueQueued {
		t.Errorf("worktree_status of bob = %+v, want queued as %s", w, b.QueueID)
	}
	if _, err := f.wt.Integrate(t.Context(), f.key("bob"), "", "lead", ""); api.ErrorCode(err) != api.CodeConflict {
		t.Errorf("integrating bob twice: %v, want a conflict", err)
	}
	f.drain(t)

	for _, id := range []string{a.QueueID, b.QueueID} {
		if e := f.entry(t, id); e.State != api.QueueLanded || e.Commit == "" {
			t.Errorf("%s = %+v, want landed", id, e)
		}
	}
	ec := f.entry(t, c.QueueID)
	if ec.State != api.QueueFailed || ec.Command != "sh check.sh" || !strings.Contains(ec.Output, "forbidden: the parts add up to 3") {
		t.Errorf("carol's entry = %+v, want failed by sh check.sh", ec)
	}
	// The batch of three failed; the bisection then checked the first
	// two alone, which passed.
	if len(ec.Checks) != 1 || len(ec.Checks[0].Batch) != 3 || ec.Checks[0].ExitCode != 1 {
		t.Errorf("carol's check runs = %+v", ec.Checks)
	}
	if ea := f.entry(t, a.QueueID); len(ea.Checks) != 2 || len(ea.Checks[1].Batch) != 2 || ea.Checks[1].ExitCode != 0 || !strings.Contains(ea.Checks[1].Output, "add up to 2") {
		t.Errorf("alice's check runs = %+v", ea.Checks)
	}
	if got := sh(t, f.repo, "show", "-s", "--format=%s", "main"); got != "Merge branch 'aw/review/main/bob' into main" {
		t.Errorf("main's head: %q", got)
	}
	if got := sh(t, f.repo, "status", "--porcelain"); got != "" {
		t.Errorf("the user's checkout after the queue: %q", got)
	}
	var failed string
	for _, l := range f.lines(t) {
		if strings.Contains(l, c.QueueID+" failed") {
			failed = l
		}
	}
	for _, want := range []string{"@carol @lead", "the check `sh check.sh` exited with status 1", a.QueueID + ", " + b.QueueID + " merged ahead of it", "forbidden: the parts add up to 3",
		"worktree queue show " + c.QueueID} {
		if !strings.Contains(failed, want) {
			t.Errorf("the failure message lacks %q:\n%s", want, failed)
		}
	}
	if !slices.ContainsFunc(f.lines(t), func(l string) bool {
		return strings.HasPrefix(l, "@alice @lead "+a.QueueID+" landed on main as commit ")
	}) {
		t.Errorf("no landed message for alice:\n%s", strings.Join(f.lines(t), "\n"))
	}
	checkEveryCommit(t, f.repo)
	if q, err := f.svc.Queue(t.Context(), new(f.scope()), false); err != nil || len(q) != 0 {
		t.Errorf("queue after = %+v, %v; want empty", q, err)
	}
}

// A branch that conflicts with one ahead of it fails alone, naming the
// file; the rest of its batch lands.
func TestMergeQueueConflictFailsOnlyItsEntry(t *testing.T) {
	t.Parallel()
	f := queueFixture(t, "4")
	commit(t, f.dir(t, "alice"), "alice's README", map[string]string{"README": "alice\n"})
	commit(t, f.dir(t, "bob"), "bob's README", map[string]string{"README": "bob\n"})
	f.part(t, "carol")
	a, b, c := f.integrate(t, "alice"), f.integrate(t, "bob"), f.integrate(t, "carol")
	f.drain(t)
	if e := f.entry(t, b.QueueID); e.State != api.QueueFailed || !slices.Equal(e.Files, []string{"README"}) || !strings.Contains(e.Reason, "conflicts in 1 file: README") {
		t.Errorf("bob's entry = %+v, want failed on README", e)
	}
	for _, id := range []string{a.QueueID, c.QueueID} {
		if e := f.entry(t, id); e.State != api.QueueLanded {
			t.Errorf("%s = %+v, want landed", id, e)
		}
	}
}

// A daemon that died after recording a landing finishes it on its next
// start: it moves the base if git has not, and never merges twice when
// git has.
func TestMergeQueueResumesALanding(t *testing.T) {
	t.Parallel()
	for name, movedBefore := range map[string]bool{"not moved": false, "moved": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := queueFixture(t, "4")
			f.part(t, "alice")
			a := f.integrate(t, "alice")
			q := store.QueueKey{Workflow: "review", Tag: "main", Base: "main"}
			batch, err := f.db.TakeBatch(t.Context(), q, 4)
			if err != nil || len(batch) != 1 {
				t.Fatal(batch, err)
			}
			base := sh(t, f.repo, "rev-parse", "main")
			ctx, unlock := f.svc.lock(t.Context(), f.repo)
			chain, _, err := f.svc.merge(ctx, f.repo, "main", base, batch)
			unlock()
			if err != nil || len(chain) != 1 {
				t.Fatal(chain, err)
			}
			if _, err := f.db.MarkLanding(t.Context(), base, []string{a.QueueID}, []string{chain[0].commit}); err != nil {
				t.Fatal(err)
			}
			if movedBefore {
				sh(t, f.repo, "merge", "--ff-only", "-q", chain[0].commit)
			}
			_, restarted := f.services()
			restarted.reconcile(t.Context())
			restarted.reconcile(t.Context()) // twice: nothing more happens
			if got := sh(t, f.repo, "rev-parse", "main"); got != chain[0].commit {
				t.Errorf("main = %s, want the recorded merge %s", got, chain[0].commit)
			}
			if e := f.entry(t, a.QueueID); e.State != api.QueueLanded || e.Commit != chain[0].commit {
				t.Errorf("entry = %+v, want landed once", e)
			}
			if n := strings.Count(strings.Join(f.lines(t), "\n"), a.QueueID+" landed"); n != 1 {
				t.Errorf("%d landed messages, want 1", n)
			}
		})
	}
}

// Dequeue takes a waiting entry out and says so; a finished one cannot
// be; an unknown id is not found.
func TestMergeQueueDequeue(t *testing.T) {
	t.Parallel()
	f := queueFixture(t, "1")
	f.part(t, "alice")
	a := f.integrate(t, "alice")
	e, err := f.svc.Dequeue(t.Context(), a.QueueID, "user", "not yet")
	if err != nil || e.State != api.QueueRemoved {
		t.Fatalf("Dequeue = %+v, %v", e, err)
	}
	if _, err := f.svc.Dequeue(t.Context(), a.QueueID, "user", ""); api.ErrorCode(err) != api.CodeConflict {
		t.Errorf("dequeue twice: %v", err)
	}
	if _, err := f.svc.Dequeue(t.Context(), "mq-404", "user", ""); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("dequeue of an unknown id: %v", err)
	}
	f.drain(t)
	if got := sh(t, f.repo, "show", "-s", "--format=%s", "main"); got != "the check" {
		t.Errorf("main moved to %q after the dequeue", got)
	}
}

// A check that outlives check_timeout is killed, process group and all,
// and fails its entry saying it ran out of time.
func TestMergeQueueCheckTimeout(t *testing.T) {
	t.Parallel()
	f := queueFixtureWith(t, `{git: worktree, checks: ["echo started; sleep 30 & sleep 30"], check_timeout: 300ms}`)
	f.part(t, "alice")
	a := f.integrate(t, "alice")
	start := time.Now()
	f.drain(t)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the queue took %s with a 300ms check_timeout", d)
	}
	e := f.entry(t, a.QueueID)
	if e.State != api.QueueFailed || !strings.Contains(e.Reason, "ran out of time (check_timeout)") || len(e.Checks) != 1 || !e.Checks[0].TimedOut ||
		!strings.Contains(e.Output, "started") {
		t.Errorf("entry = %+v", e)
	}
}

// A paused team's queue waits; without checks in its file, integrate
// merges at once as before.
func TestMergeQueueWaitsWhilePausedAndNeedsChecks(t *testing.T) {
	t.Parallel()
	f := queueFixture(t, "4")
	f.part(t, "alice")
	a := f.integrate(t, "alice")
	if err := f.db.SetWorkflowState(t.Context(), "review", "main", api.WorkflowPaused, ""); err != nil {
		t.Fatal(err)
	}
	if f.svc.drain(t.Context()) {
		t.Error("the queue of a paused team worked")
	}
	if e := f.entry(t, a.QueueID); e.State != api.QueueQueued {
		t.Errorf("entry while paused = %+v", e)
	}
	if err := f.db.SetWorkflowState(t.Context(), "review", "main", api.WorkflowRunning, ""); err != nil {
		t.Fatal(err)
	}
	f.drain(t)
	if e := f.entry(t, a.QueueID); e.State != api.QueueLanded {
		t.Errorf("entry after resume = %+v", e)
	}

	f.wf.ConfigYAML = "name: review\nworkspace: {git: worktree}\nagents: {alice: {backend: mock}}\n"
	if _, err := f.db.SaveWorkflow(t.Context(), f.wf); err != nil {
		t.Fatal(err)
	}
	f.part(t, "bob")
	if res, err := f.wt.Integrate(t.Context(), f.key("bob"), "", "lead", ""); err != nil || res.Queued || !res.Merged {
		t.Errorf("integrate without checks = %+v, %v; want merged at once", res, err)
	}
}

// A check gets the daemon's PATH and HOME but none of its secrets, and a
// temporary directory of its own.
func TestCheckEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("AGENT_WORKER_TOKEN", "secret")
	t.Setenv("LC_ALL", "C")
	env := checkEnv("/tmp/aw-check-1")
	for _, kv := range env {
		if strings.Contains(kv, "secret") {
			t.Errorf("a check inherits %s", kv)
		}
	}
	for _, want := range []string{"TMPDIR=/tmp/aw-check-1", "LC_ALL=C", "PATH=" + os.Getenv("PATH")} {
		if !slices.Contains(env, want) {
			t.Errorf("check env lacks %s: %v", want, env)
		}
	}
}

// Where the kernel can confine runs, a check is confined too: it may
// write its scratch worktree but not the user's checkout, nor move a ref.
func TestMergeQueueChecksAreConfined(t *testing.T) {
	t.Parallel()
	status := sb.Probe()
	if !status.Available() {
		t.Skipf("checks run unconfined here: %s", status.Why)
	}
	f := queueFixture(t, "4")
	outside := filepath.Join(f.repo, "escaped")
	f.wf.ConfigYAML = "name: review\nworkspace: {git: worktree, checks: [\"touch inside && echo wrote inside && echo \\\"cache $GOCACHE\\\"\", \"touch " + outside + "\"]}\nagents: {alice: {backend: mock}}\n"
	if _, err := f.db.SaveWorkflow(t.Context(), f.wf); err != nil {
		t.Fatal(err)
	}
	f.svc.confine = sandbox.New(sandbox.Auto, status, f.home).Check
	f.part(t, "alice")
	a := f.integrate(t, "alice")
	f.drain(t)
	e := f.entry(t, a.QueueID)
	if e.State != api.QueueFailed || len(e.Checks) != 2 || e.Checks[0].ExitCode != 0 || !strings.Contains(e.Output, "Permission denied") {
		t.Errorf("entry = %+v, want the second check refused", e)
	}
	if len(e.Checks) > 0 {
		if out := e.Checks[0].Output; !strings.Contains(out, "aw-check-") || !strings.Contains(out, "/go-build") {
			t.Errorf("a confined check's GOCACHE is not in its TMPDIR: %q", out)
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("a check wrote into the user's checkout")
	}
}

// An entry dequeued while its batch is checked does not land, and the
// entries merged on top of it are checked again without it.
func TestMergeQueueDequeueDuringCheck(t *testing.T) {
	t.Parallel()
	f := queueFixtureWith(t, `{git: worktree, checks: ["touch .started; while [ ! -f .go ]; do sleep 0.02; done; sh check.sh"]}`)
	f.part(t, "alice")
	f.part(t, "bob")
	a, b := f.integrate(t, "alice"), f.integrate(t, "bob")
	scratch := f.svc.scratchDir(f.wf)
	started := func() bool { _, err := os.Stat(filepath.Join(scratch, ".started")); return err == nil }
	done := make(chan struct{})
	go func() {
		defer close(done)
		for f.svc.drain(context.Background()) {
		}
	}()
	testkit.WaitFor(t, "the first check to start", started)
	if e, err := f.svc.Dequeue(t.Context(), a.QueueID, "user", "not yet"); err != nil || e.State != api.QueueRemoved {
		t.Fatalf("dequeue during the check = %+v, %v", e, err)
	}
	write(t, filepath.Join(scratch, ".go"), "")
	testkit.WaitFor(t, "bob's check again, alone", func() bool {
		e := f.entry(t, b.QueueID)
		return e.Attempts == 2 && e.State == api.QueueChecking && started()
	})
	write(t, filepath.Join(scratch, ".go"), "")
	<-done
	if e := f.entry(t, b.QueueID); e.State != api.QueueLanded {
		t.Errorf("bob's entry = %+v, want landed", e)
	}
	if e := f.entry(t, a.QueueID); e.State != api.QueueRemoved {
		t.Errorf("alice's entry = %+v, want removed", e)
	}
	if fileAt(t, f.repo, "main", "parts/alice") || !fileAt(t, f.repo, "main", "parts/bob") {
		t.Error("main holds alice's dequeued part, or lacks bob's")
	}
}

// A branch merged into the base by other means while it waited lands
// without another merge, and says so.
func TestMergeQueueBranchAlreadyOnBase(t *testing.T) {
	t.Parallel()
	f := queueFixture(t, "4")
	f.part(t, "alice")
	a := f.integrate(t, "alice")
	sh(t, f.repo, "merge", "-q", "--no-edit", "aw/review/main/alice")
	head := sh(t, f.repo, "rev-parse", "main")
	f.drain(t)
	if e := f.entry(t, a.QueueID); e.State != api.QueueLanded || e.Commit != head || len(e.Checks) != 0 {
		t.Errorf("entry = %+v, want landed at %s without a check", e, head)
	}
	if got := sh(t, f.repo, "rev-parse", "main"); got != head {
		t.Errorf("main moved to %s", got)
	}
	if !slices.ContainsFunc(f.lines(t), func(l string) bool {
		return strings.Contains(l, a.QueueID+": alice's branch aw/review/main/alice was on main already")
	}) {
		t.Errorf("no line saying so:\n%s", strings.Join(f.lines(t), "\n"))
	}
}
