package workflows

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// fakeSched records what the manager asks of the scheduler.
type fakeSched struct {
	mu                          sync.Mutex
	added, removed, rescheduled []string
}

func (s *fakeSched) Add(k store.AgentKey) { s.record(&s.added, k) }

func (s *fakeSched) Remove(k store.AgentKey) { s.record(&s.removed, k) }

func (s *fakeSched) Reschedule(k store.AgentKey) { s.record(&s.rescheduled, k) }

func (s *fakeSched) record(to *[]string, k store.AgentKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*to = append(*to, k.String())
}

// calls returns a sorted, deduplicated copy of one of the lists.
func (s *fakeSched) calls(of *[]string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(*of)
	slices.Sort(out)
	return slices.Compact(out)
}

// fakeCatalog has the mock backend installed and nothing else.
type fakeCatalog struct{}

func (fakeCatalog) Names(kind string) []string {
	if kind == plugin.KindBackend {
		return []string{"mock"}
	}
	return nil
}

func (fakeCatalog) Unusable(kind, name string) error { return nil }

func (fakeCatalog) Dirs() []string { return []string{"/plugins.d"} }

// fakeTriggers accepts every trigger.
type fakeTriggers struct{}

func (fakeTriggers) Check(string, []workflow.Trigger) error { return nil }

func (fakeTriggers) Pending(context.Context, store.Scope) bool { return false }

func (fakeTriggers) Fire(context.Context, store.Scope) {}

// manager is a Manager on a fresh SQLite store, with fakes for the
// scheduler, the catalog and the triggers: no daemon, no plugin process.
func manager(t *testing.T) (*Manager, *fakeSched, *store.DB) {
	t.Helper()
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sched := &fakeSched{}
	m := New(Config{DB: db, Team: team.New(team.Config{DB: db, Logger: hclog.NewNullLogger()}), Sched: sched, Triggers: fakeTriggers{},
		Catalog: fakeCatalog{}, DefaultModel: "test/model", Now: time.Now, Log: hclog.NewNullLogger()})
	return m, sched, db
}

// writeFile writes a workflow file and returns its path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func start(t *testing.T, m *Manager, path string) Started {
	t.Helper()
	st, err := m.Start(t.Context(), api.StartWorkflow{Path: path})
	if err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return st
}

// agentStates is each agent of the workflow name:tag with its state.
func agentStates(t *testing.T, db *store.DB, name string) map[string]api.AgentState {
	t.Helper()
	all, err := db.ListAgents(t.Context(), store.AgentFilter{Workflow: name, Tag: api.DefaultTag})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]api.AgentState{}
	for _, a := range all {
		out[a.Name] = a.State
	}
	return out
}

func getWorkflow(t *testing.T, db *store.DB, name string) store.Workflow {
	t.Helper()
	w, err := db.GetWorkflow(t.Context(), name, api.DefaultTag)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

const review = `name: review
agents:
  alice: {backend: mock, system_prompt: You review.}
  bob: {backend: mock, system_prompt: You write.}
kickoff: "@alice start"
`

// widened is review with an agent of a backend no agent had: an edit
// that waits for the owner.
const widened = `name: review
agents:
  alice: {backend: mock, system_prompt: You review.}
  bob: {backend: mock, system_prompt: You write.}
  carol: {backend: external}
kickoff: "@alice start"
`

func TestStartCreatesSchedulesAndKicksOff(t *testing.T) {
	t.Parallel()
	m, sched, db := manager(t)
	path := writeFile(t, t.TempDir(), "review.yaml", review)
	st := start(t, m, path)
	if want := (store.Scope{Workflow: "review", Tag: api.DefaultTag}); st.Scope != want {
		t.Errorf("scope = %v, want %v", st.Scope, want)
	}
	if w := getWorkflow(t, db, "review"); w.State != api.WorkflowRunning || w.SourcePath != path {
		t.Errorf("workflow is %s from %s, want running from %s", w.State, w.SourcePath, path)
	}
	want := []string{"alice@review:main", "bob@review:main"}
	if diff := cmp.Diff(want, sched.calls(&sched.added)); diff != "" {
		t.Errorf("scheduled (-want +got):\n%s", diff)
	}
	msgs, err := db.ReadChannel(t.Context(), st.Scope, store.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Content != "@alice start" {
		t.Errorf("channel after the start = %+v, want the kickoff alone", msgs)
	}
	if got := m.watchers(path); len(got) != 1 || got[0] != st.Scope {
		t.Errorf("the file is watched for %v, want %v", got, st.Scope)
	}
}

func TestStartRefusesBadInput(t *testing.T) {
	t.Parallel()
	m, _, _ := manager(t)
	dir := t.TempDir()
	tests := map[string]struct {
		req      api.StartWorkflow
		code     api.Code
		contains string
	}{
		"no path":         {api.StartWorkflow{}, api.CodeInvalid, "path is required"},
		"no such file":    {api.StartWorkflow{Path: filepath.Join(dir, "gone.yaml")}, api.CodeNotFound, "gone.yaml"},
		"the global name": {api.StartWorkflow{Path: writeFile(t, dir, "g.yaml", "name: global\nagents: {a: {backend: mock}}\n")}, api.CodeInvalid, "standalone agents"},
		"a bad tag":       {api.StartWorkflow{Path: writeFile(t, dir, "t.yaml", review), Tag: "no spaces"}, api.CodeInvalid, "tag"},
		"unknown backend": {api.StartWorkflow{Path: writeFile(t, dir, "b.yaml", "name: b\nagents: {a: {backend: mokc}}\n")}, api.CodeInvalid, `did you mean "mock"`},
		"a failing setup": {api.StartWorkflow{Path: writeFile(t, dir, "s.yaml", "name: s\nagents: {a: {backend: mock}}\nsetup: [{shell: exit 3}]\n")}, api.CodeInvalid, "setup step 1"},
	}
	for name, tc := range tests {
		_, err := m.Start(t.Context(), tc.req)
		if api.ErrorCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: Start = %v (%s), want %s containing %q", name, err, api.ErrorCode(err), tc.code, tc.contains)
		}
	}
	all, err := m.db.ListWorkflows(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range all {
		if w.Name != api.GlobalWorkflow {
			t.Errorf("workflow %s:%s recorded by a refused start", w.Name, w.Tag)
		}
	}
}

func TestStartTwiceIsAConflict(t *testing.T) {
	t.Parallel()
	m, _, _ := manager(t)
	path := writeFile(t, t.TempDir(), "review.yaml", review)
	start(t, m, path)
	_, err := m.Start(t.Context(), api.StartWorkflow{Path: path})
	if api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "already started") {
		t.Fatalf("second start = %v, want a conflict that says it is already started", err)
	}
	// Another tag is another instance.
	if _, err := m.Start(t.Context(), api.StartWorkflow{Path: path, Tag: "pr-2"}); err != nil {
		t.Fatalf("start under another tag: %v", err)
	}
}

func TestStopStopsTheAgentsAndTheWatch(t *testing.T) {
	t.Parallel()
	m, sched, db := manager(t)
	path := writeFile(t, t.TempDir(), "review.yaml", review)
	st := start(t, m, path)
	if err := m.Stop(t.Context(), st.Scope, true); err != nil {
		t.Fatal(err)
	}
	if w := getWorkflow(t, db, "review"); w.State != api.WorkflowStopped {
		t.Errorf("workflow is %s after stop, want stopped", w.State)
	}
	want := map[string]api.AgentState{"alice": api.AgentStopped, "bob": api.AgentStopped}
	if diff := cmp.Diff(want, agentStates(t, db, "review")); diff != "" {
		t.Errorf("agents after stop (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"alice@review:main", "bob@review:main"}, sched.calls(&sched.removed)); diff != "" {
		t.Errorf("stop with cancel removes the agents' loops (-want +got):\n%s", diff)
	}
	if got := m.watchers(path); len(got) != 0 {
		t.Errorf("a stopped workflow's file is still watched for %v", got)
	}
	// Stopped, it starts again from its file.
	start(t, m, path)
	if err := m.Stop(t.Context(), store.Scope{Workflow: api.GlobalWorkflow, Tag: api.DefaultTag}, false); api.ErrorCode(err) != api.CodeInvalid {
		t.Errorf("stopping the global workflow = %v, want invalid", err)
	}
}

func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	m, _, db := manager(t)
	st := start(t, m, writeFile(t, t.TempDir(), "review.yaml", review))
	if err := m.Resume(t.Context(), st.Scope); api.ErrorCode(err) != api.CodeConflict {
		t.Errorf("resume of a running workflow = %v, want a conflict: nothing to resume", err)
	}
	if err := m.Pause(t.Context(), st.Scope); err != nil {
		t.Fatal(err)
	}
	if w := getWorkflow(t, db, "review"); w.State != api.WorkflowPaused {
		t.Errorf("workflow is %s after pause, want paused", w.State)
	}
	if err := m.Resume(t.Context(), st.Scope); err != nil {
		t.Fatal(err)
	}
	if w := getWorkflow(t, db, "review"); w.State != api.WorkflowRunning {
		t.Errorf("workflow is %s after resume, want running", w.State)
	}
	if err := m.Pause(t.Context(), store.Scope{Workflow: "nope", Tag: api.DefaultTag}); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("pause of a workflow that does not exist = %v, want not found", err)
	}
}

func TestReloadDecisions(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		edit string
		// what follows the edit
		agents  map[string]api.AgentState
		system  string // alice's system prompt
		error   string // the workflow's recorded error contains
		pending bool   // the edit waits for the owner
	}{
		"a narrow edit applies": {
			edit:   "name: review\nagents:\n  alice: {backend: mock, system_prompt: You review twice.}\n",
			agents: map[string]api.AgentState{"alice": api.AgentIdle, "bob": api.AgentStopped},
			system: "You review twice.",
		},
		"a broken edit is rejected": {
			edit:   "name: review\nagents: [\n",
			agents: map[string]api.AgentState{"alice": api.AgentIdle, "bob": api.AgentIdle},
			system: "You review.",
			error:  "edit rejected, the last good config keeps running",
		},
		"a rename is rejected": {
			edit:   strings.Replace(review, "name: review", "name: other", 1),
			agents: map[string]api.AgentState{"alice": api.AgentIdle, "bob": api.AgentIdle},
			system: "You review.",
			error:  "name changed from review to other",
		},
		"a widening edit waits": {
			edit:    widened,
			agents:  map[string]api.AgentState{"alice": api.AgentIdle, "bob": api.AgentIdle},
			system:  "You review.",
			pending: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, _, db := manager(t)
			path := writeFile(t, t.TempDir(), "review.yaml", review)
			start(t, m, path)
			writeFile(t, filepath.Dir(path), "review.yaml", tc.edit)
			m.reload(t.Context(), path)
			if diff := cmp.Diff(tc.agents, agentStates(t, db, "review")); diff != "" {
				t.Errorf("agents after the edit (-want +got):\n%s", diff)
			}
			a, err := db.GetAgent(t.Context(), store.AgentKey{Name: "alice", Workflow: "review", Tag: api.DefaultTag})
			if err != nil || a.System != tc.system {
				t.Errorf("alice's system prompt = %q (%v), want %q", a.System, err, tc.system)
			}
			w := getWorkflow(t, db, "review")
			if tc.error == "" && w.Error != "" || !strings.Contains(w.Error, tc.error) {
				t.Errorf("recorded error = %q, want one containing %q", w.Error, tc.error)
			}
			if got := w.PendingYAML != ""; got != tc.pending {
				t.Errorf("edit waiting = %v, want %v", got, tc.pending)
			}
			if w.State != api.WorkflowRunning {
				t.Errorf("workflow is %s after the edit, want running", w.State)
			}
		})
	}
}

func TestAcceptAppliesTheEditThatWaits(t *testing.T) {
	t.Parallel()
	m, sched, db := manager(t)
	path := writeFile(t, t.TempDir(), "review.yaml", review)
	st := start(t, m, path)
	if err := m.Accept(t.Context(), st.Scope); api.ErrorCode(err) != api.CodeConflict {
		t.Errorf("accept with nothing waiting = %v, want a conflict", err)
	}
	writeFile(t, filepath.Dir(path), "review.yaml", widened)
	m.reload(t.Context(), path)
	// The file changes again after the owner was shown the edit: accept
	// applies what was shown.
	writeFile(t, filepath.Dir(path), "review.yaml", strings.Replace(widened, "carol", "dave", 1))
	if err := m.Accept(t.Context(), st.Scope); err != nil {
		t.Fatal(err)
	}
	want := map[string]api.AgentState{"alice": api.AgentIdle, "bob": api.AgentIdle, "carol": api.AgentIdle}
	if diff := cmp.Diff(want, agentStates(t, db, "review")); diff != "" {
		t.Errorf("agents after accept (-want +got):\n%s", diff)
	}
	if !slices.Contains(sched.calls(&sched.added), "carol@review:main") {
		t.Errorf("the accepted agent is not scheduled: %v", sched.calls(&sched.added))
	}
	if w := getWorkflow(t, db, "review"); w.PendingYAML != "" || w.Error != "" {
		t.Errorf("after accept: pending %q, error %q; want neither", w.PendingYAML, w.Error)
	}
}

func TestDocsFolderIsOneInstances(t *testing.T) {
	t.Parallel()
	m, _, _ := manager(t)
	path := writeFile(t, t.TempDir(), "notes.yaml", "name: notes\nagents: {a: {backend: mock}}\ncontext: {documents: {provider: file, dir: ./docs}}\n")
	start(t, m, path)
	_, err := m.Start(t.Context(), api.StartWorkflow{Path: path, Tag: "two"})
	if api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "already used by @notes:main") {
		t.Errorf("second instance on the same documents folder = %v, want a conflict naming the first", err)
	}
}

// within runs fn and fails the test if it has not returned by the time a
// minute has passed: the bound is only there so that a regression (fn
// waiting for another workflow's setup step, which never ends by itself
// here) fails instead of hanging the test binary.
func within(t *testing.T, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s waited for another workflow's setup step", what)
	}
}

// A workflow whose setup step blocks (here on a fifo the test holds) is
// starting; meanwhile another team's commands all complete, while the
// setup is still blocked, and a second start of the same workflow is
// refused at once instead of running its setup again.
func TestSlowSetupHoldsUpNoOtherWorkflow(t *testing.T) {
	t.Parallel()
	m, _, db := manager(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Skipf("no fifo to block the setup step on: %v", err)
	}
	slow := writeFile(t, dir, "slow.yaml", "name: slow\nagents: {a: {backend: mock}}\nsetup: [{shell: cat gate, as: token, timeout: 10m}]\n")
	other := writeFile(t, dir, "other.yaml", review)
	third := writeFile(t, dir, "third.yaml", "name: third\nagents: {a: {backend: mock}}\n")
	otherScope := start(t, m, other).Scope

	started := make(chan error, 1)
	go func() {
		_, err := m.Start(context.WithoutCancel(t.Context()), api.StartWorkflow{Path: slow})
		started <- err
	}()
	// Opening the fifo for writing returns once the setup step opened it
	// for reading: the step is running, and blocks until the test closes.
	opened := make(chan *os.File, 1)
	go func() {
		if w, err := os.OpenFile(gate, os.O_WRONLY, 0); err == nil {
			opened <- w
		}
	}()
	var w *os.File
	select {
	case w = <-opened:
	case err := <-started:
		// Let the opener go: it waits for a reader that will not come.
		if r, oerr := os.OpenFile(gate, os.O_RDONLY|syscall.O_NONBLOCK, 0); oerr == nil {
			defer r.Close()
		}
		t.Fatalf("the slow workflow's start ended before its setup step ran: %v", err)
	}

	within(t, "a second start of the slow workflow", func() error {
		_, err := m.Start(t.Context(), api.StartWorkflow{Path: slow})
		if api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "already being started") {
			t.Errorf("second start while the first runs its setup = %v, want a conflict that says it is being started", err)
		}
		return nil
	})
	within(t, "pause of another workflow", func() error { return m.Pause(t.Context(), otherScope) })
	within(t, "resume of another workflow", func() error { return m.Resume(t.Context(), otherScope) })
	within(t, "reload of another workflow", func() error {
		writeFile(t, dir, "other.yaml", strings.Replace(review, "You review.", "You review fast.", 1))
		m.reload(t.Context(), other)
		a, err := db.GetAgent(t.Context(), store.AgentKey{Name: "alice", Workflow: "review", Tag: api.DefaultTag})
		if err == nil && a.System != "You review fast." {
			t.Errorf("the other workflow's edit was not applied: alice's prompt is %q", a.System)
		}
		return err
	})
	within(t, "start of a third workflow", func() error {
		_, err := m.Start(t.Context(), api.StartWorkflow{Path: third})
		return err
	})
	within(t, "stop of another workflow", func() error { return m.Stop(t.Context(), otherScope, false) })

	select {
	case err := <-started:
		t.Fatalf("the slow start ended while its setup step was blocked: %v", err)
	default:
	}
	if _, err := w.WriteString("opened\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := <-started; err != nil {
		t.Fatalf("the slow start, once its setup step ended: %v", err)
	}
	wf := getWorkflow(t, db, "slow")
	if wf.State != api.WorkflowRunning || wf.Vars["token"] != "opened" {
		t.Errorf("slow workflow is %s with setup results %v, want running with token=opened", wf.State, wf.Vars)
	}
}

// A stop while a first start runs its setup steps ends them, and the
// team does not start after them: the user asked for it to stop.
func TestStopDuringSetupEndsTheStart(t *testing.T) {
	t.Parallel()
	m, sched, db := manager(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Skipf("no fifo to block the setup step on: %v", err)
	}
	slow := writeFile(t, dir, "slow.yaml", "name: slow\nagents: {a: {backend: mock}}\nsetup: [{shell: cat gate, as: token, timeout: 10m}]\n")
	started := make(chan error, 1)
	go func() {
		_, err := m.Start(context.WithoutCancel(t.Context()), api.StartWorkflow{Path: slow})
		started <- err
	}()
	// The setup step is running once the fifo has a reader.
	opened := make(chan *os.File, 1)
	go func() {
		if w, err := os.OpenFile(gate, os.O_WRONLY, 0); err == nil {
			opened <- w
		}
	}()
	select {
	case w := <-opened:
		defer w.Close()
	case err := <-started:
		if r, oerr := os.OpenFile(gate, os.O_RDONLY|syscall.O_NONBLOCK, 0); oerr == nil {
			defer r.Close()
		}
		t.Fatalf("the start ended before its setup step ran: %v", err)
	}
	if err := m.Stop(t.Context(), store.Scope{Workflow: "slow", Tag: api.DefaultTag}, false); err != nil {
		t.Fatalf("stop during the setup step: %v", err)
	}
	err := <-started
	if api.ErrorCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "stopped while its setup steps ran") {
		t.Fatalf("the start stopped during its setup = %v, want a conflict that says so", err)
	}
	if _, err := db.GetWorkflow(t.Context(), "slow", api.DefaultTag); api.ErrorCode(err) != api.CodeNotFound {
		t.Errorf("the stopped start left a workflow record: %v", err)
	}
	if added := sched.calls(&sched.added); len(added) != 0 {
		t.Errorf("the stopped start scheduled %v", added)
	}
}
