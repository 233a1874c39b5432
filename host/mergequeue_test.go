package host

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// With checks in the workspace, a planner's worktree_integrate and the
// user's POST integrate queue the branches; the queue lands the one whose
// merge passes and fails the other with the check's output; the planner
// sees both with worktree_queue, the user with GET /worktrees/queue and
// /worktrees/queue/{id}; bad requests get the usual codes.
func TestMergeQueueThroughMCPAndHTTP(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{})
	repo := gitRepo(t)
	file := filepath.Join(repo, "team.yaml")
	yml := strings.NewReplacer("%ALICE%", shellCommit("a.txt", "fine"), "%BOB%", shellCommit("b.txt", "bad"),
		"workspace: {git: worktree, base: main}", `workspace: {git: worktree, base: main, checks: ["if grep -l bad *.txt; then echo found bad >&2; exit 1; fi"]}`).Replace(worktreeTeam)
	saveFile(t, file, yml)
	ev := watchEvents(t, th)
	if _, err := th.client().StartWorkflow(context.Background(), api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	for done := map[string]bool{}; len(done) < 2; {
		e := ev.next("alice's and bob's runs", func(e team.Event) bool { return e.Kind == team.EventRunFinished || e.Kind == team.EventRunFailed })
		done[e.Agent.Name] = true
	}

	lead := th.join(t, "lead@team")
	res := lead.ok("worktree_integrate", map[string]any{"agent": "alice"})
	if res["queued"] != true || res["merged"] == true || !strings.HasPrefix(res["queue_id"].(string), "mq-") {
		t.Fatalf("worktree_integrate with checks = %v, want it queued", res)
	}
	status, e, body := th.call(t, "POST", "/worktrees/bob@team/integrate", `{}`)
	var ir api.IntegrateResult
	if status != http.StatusOK || json.Unmarshal(body, &ir) != nil || !ir.Queued || ir.QueueID == "" {
		t.Fatalf("POST integrate bob: %d %+v %s", status, e, body)
	}
	testkit.WaitFor(t, "the queue to empty", func() bool {
		es, err := th.client().Queue(context.Background(), "@team", false)
		return err == nil && len(es) == 0
	})
	q := lead.ok("worktree_queue", map[string]any{"all": true})
	if n, _ := q["count"].(float64); n != 2 {
		t.Fatalf("worktree_queue all = %v", q)
	}
	states := map[string]string{}
	for _, x := range q["entries"].([]any) {
		m := x.(map[string]any)
		states[m["agent"].(string)] = m["state"].(string)
	}
	if states["alice"] != "landed" || states["bob"] != "failed" {
		t.Errorf("states = %v, want alice landed, bob failed", states)
	}
	if got := gitIn(t, repo, "log", "-1", "--format=%s", "main"); got != "Merge branch 'aw/team/main/alice' into main" {
		t.Errorf("main's head: %q", got)
	}
	bobEntry, err := th.client().QueueEntry(context.Background(), ir.QueueID)
	if err != nil || bobEntry.State != api.QueueFailed || len(bobEntry.Checks) != 1 || !strings.Contains(bobEntry.Checks[0].Output, "found bad") ||
		!strings.Contains(bobEntry.Checks[0].Output, "b.txt") {
		t.Errorf("GET /worktrees/queue/%s = %+v, %v", ir.QueueID, bobEntry, err)
	}
	lines := strings.Join(systemLines(t, th, "@team"), "\n")
	if !strings.Contains(lines, "@bob "+ir.QueueID+" failed") || !strings.Contains(lines, "found bad") {
		t.Errorf("no failure line for bob:\n%s", lines)
	}
	for path, want := range map[string]int{
		"/worktrees/queue?target=alice@team": http.StatusBadRequest,
		"/worktrees/queue?target=@nope":      http.StatusNotFound,
		"/worktrees/queue/mq-404":            http.StatusNotFound,
	} {
		if status, e, _ := th.call(t, "GET", path, ""); status != want {
			t.Errorf("GET %s: %d %+v, want %d", path, status, e, want)
		}
	}
	if status, e, _ := th.call(t, "DELETE", "/worktrees/queue/"+ir.QueueID, ""); status != http.StatusConflict || !strings.Contains(e.Message, "is failed") {
		t.Errorf("DELETE a failed entry: %d %+v, want a conflict", status, e)
	}
}
