package host

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// Two mock agents scripted to answer each other forever: the loop guard
// pauses the workflow after exactly max_rounds agent messages, says so in
// the channel, no run starts while it is paused, and nothing is lost: the
// last message waits unread and is the first thing the next run sees.
func TestLoopGuardPausesATeamTalkingToItself(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	file := filepath.Join(t.TempDir(), "pingpong.yaml")
	saveFile(t, file, `name: pingpong
loop_guard: {max_rounds: 6}
agents:
  alice: {backend: mock, config: {script: [{reply: "@bob ping"}]}}
  bob: {backend: mock, config: {script: [{reply: "@alice pong"}]}}
kickoff: "@alice start"
`)
	ev := watchEvents(t, th)
	ctx := context.Background()
	if _, err := th.client().StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	scope := store.Scope{Workflow: "pingpong", Tag: "main"}
	ev.next("the workflow paused", func(e team.Event) bool {
		return e.Kind == team.EventWorkflow && e.Agent.Workflow == "pingpong" && e.State == "paused"
	})
	// bob's run, which said the sixth message, ends normally.
	ev.next("bob's sixth-message run ends", func(e team.Event) bool {
		return e.Kind == team.EventRunFinished && e.Agent.Name == "bob" && e.Agent.Workflow == "pingpong"
	})
	w, err := th.DB().GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if err != nil || w.State != api.WorkflowPaused || !strings.Contains(w.Error, "loop guard") {
		t.Fatalf("workflow after the guard = %+v, %v", w, err)
	}
	ms, err := th.client().Peek(ctx, "@pingpong", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var agentLines int
	for _, m := range ms[1 : len(ms)-1] {
		if m.From == "alice" || m.From == "bob" {
			agentLines++
		}
	}
	guard := ms[len(ms)-1]
	if len(ms) != 8 || ms[0].From != "system" || agentLines != 6 || guard.From != "system" ||
		!strings.Contains(guard.Content, "@pingpong is paused: 6 messages in a row came from agents (bob, alice)") ||
		!strings.Contains(guard.Content, "agent-worker resume @pingpong") {
		t.Fatalf("channel = %+v", ms)
	}
	alice := store.AgentKey{Name: "alice", Workflow: "pingpong", Tag: "main"}
	if d, err := th.DB().InboxDepth(ctx, alice); err != nil || d != 1 {
		t.Errorf("alice's inbox holds %d unread, %v; want bob's last pong", d, err)
	}
	// A human asks alice something while the team is paused: it waits.
	marker, err := th.client().Send(ctx, api.SendRequest{Target: "@pingpong", Message: "@alice still there?"})
	if err != nil {
		t.Fatal(err)
	}
	// The runs before the resume, by id: a start time (stored to the
	// millisecond) cannot be ordered against the resume's own clock.
	paused, err := th.DB().ListRuns(ctx, store.RunFilter{Agent: alice, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for _, r := range paused {
		before[r.ID] = true
	}
	if err := th.DB().SetWorkflowState(ctx, scope.Workflow, scope.Tag, api.WorkflowRunning, ""); err != nil {
		t.Fatal(err)
	}
	th.sched.Wake(alice)
	ev.next("alice runs again after the resume", func(e team.Event) bool {
		return e.Kind == team.EventRunFinished && e.Agent == alice
	})
	runs, err := th.DB().ListRuns(ctx, store.RunFilter{Agent: alice, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	// Newest first: the first run after the resume is the oldest one that
	// was not there before it.
	first := store.Run{}
	for _, r := range runs {
		if !before[r.ID] {
			first = r
		}
	}
	if len(before) != 3 {
		t.Errorf("alice ran %d time(s) before the resume: want 3 before the guard and none while paused", len(before))
	}
	if first.ID == "" || first.InboxUntilSeq < marker.Seq {
		t.Errorf("alice's first run after the resume (%+v) did not see the pong and the question (#%d)", first, marker.Seq)
	}
}
