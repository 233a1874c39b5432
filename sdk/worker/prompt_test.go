package worker_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestBuildPrompt(t *testing.T) {
	t.Parallel()
	at := func(sec int) time.Time { return time.Date(2025, 6, 1, 14, 30, sec, 0, time.UTC) }
	agent := backend.Agent{Name: "alice", Workflow: "review", Tag: "pr-7", Model: "m", System: "never in the prompt"}
	inbox := []worker.Message{
		{Seq: 3, From: "bob", Content: "@alice can you review the diff?", Kind: "message", Mentions: []string{"alice"}, CreatedAt: at(1)},
		{Seq: 5, From: "carol", To: "alice", Content: "between us:\nthe tests are flaky", Kind: "message", Mentions: []string{"alice"}, CreatedAt: at(9)},
	}
	recent := []worker.Message{
		{Seq: 1, From: "system", Content: "workflow started", Kind: "system", CreatedAt: at(0)},
		inbox[0],
		{Seq: 4, From: "alice", To: "bob", Content: "on it", Kind: "message", CreatedAt: at(5)},
		inbox[1],
		{Seq: 6, From: "dave", Content: strings.Repeat("long ", 100), Kind: "message", CreatedAt: at(20)},
	}
	cases := map[string]worker.Context{
		"empty": {Agent: agent, Attempt: 1},
		"full": {Agent: agent, Inbox: inbox, Recent: recent, Document: "# Plan\n- ship it\n\n",
			ProjectDir: "/src/project", Attempt: 1},
		"retry": {Agent: agent, Inbox: inbox[:1], Recent: recent[:2], Document: "  \n", ProjectDir: "/src/project", Attempt: 3},
		"documents": {Agent: agent, Inbox: inbox[:1], Document: "# Plan\n", Attempt: 1,
			Documents: []worker.Document{{Path: "notes.md", Size: 7}, {Path: "specs/api.md", Size: 1234}, {Path: "todo.txt", Size: 0}}},
		"repos": {Agent: agent, Inbox: inbox[:1], ProjectDir: "/src/project", Attempt: 1,
			Repos: []backend.Repo{{Name: "lib", Path: "/src/lib"}, {Name: "app", Path: "/data/worktrees/alice/app", Write: true}}},
		"documents_only": {Agent: agent, Attempt: 1, Documents: []worker.Document{{Path: "plan.md", Size: 10}}},
		"effort": {Agent: agent, Inbox: inbox[:1], Attempt: 1, Effort: &tools.EffortContext{
			EffortResult: tools.EffortResult{Effort: "effort-2", Skill: "implement", Dir: "/src/project/app", Ordinal: 2, State: "active",
				Phase: &tools.EffortPhase{N: 2, Of: 4, Name: "test-first", Instructions: "Write the failing test.",
					Proof: []tools.EffortProofField{{Name: "failing_test", Type: "string"}}, Missing: []string{`{file: "*_test.go"}`}},
				Token: "awe1.effort-2.1.n.m"},
			Here:       "you were here: effort effort-2 (implement #2 on /src/project/app), phase 2 of 4, test-first, since 2025-06-01T14:30:00Z",
			Notes:      []tools.EffortNote{{Phase: "plan", Notes: "plan in 2_IMPLEMENT_PLAN.md"}},
			Directives: []tools.EffortDirective{{Path: "/src/project/AGENTS.md", Content: "Run go vet.\n"}}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := worker.BuildPrompt(c)
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("BuildPrompt (-want +got):\n%s", diff)
			}
			if strings.Contains(got, "never in the prompt") {
				t.Error("the system prompt leaked into the user prompt")
			}
		})
	}
}

// The sections come in the seed's order whatever is in them.
func TestBuildPromptSectionOrder(t *testing.T) {
	t.Parallel()
	got := worker.BuildPrompt(worker.Context{
		Agent:    backend.Agent{Name: "a", Workflow: "w", Tag: "t"},
		Inbox:    []worker.Message{{Seq: 1, From: "u", Content: "@a hi"}},
		Recent:   []worker.Message{{Seq: 1, From: "u", Content: "@a hi"}},
		Document: "doc", ProjectDir: "/p", Attempt: 2,
	})
	last := -1
	for _, s := range []string{"You are @a in team @w:t", "/p", "## Inbox (1 message for you)", "## Recent activity",
		"## Current workspace", "This is retry attempt 2", "## Instructions"} {
		i := strings.Index(got, s)
		if i <= last {
			t.Fatalf("%q is missing or out of order in:\n%s", s, got)
		}
		last = i
	}
}
