package efforts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/store"
)

// Show gives the whole timeline of the skill, the evidence observed in
// each phase reached, and the effort's files present in its directory;
// Artifact reads only those files, never another path.
func TestShowTimelineAndArtifacts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	dir := filepath.Join(f.project, "src")
	res, err := f.svc.Start(ctx, StartRequest{Agent: f.alice, Dir: dir, Skill: "implement"})
	if err != nil {
		t.Fatal(err)
	}
	zero := 0
	if _, err := f.db.Observe(ctx, res.Effort, 0, store.ObservedShell, "go list ./...", &zero, "run_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Continue(ctx, Step{Agent: f.alice, Token: res.Token, Proof: Proof{Text: map[string]string{"plan_summary": "p"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Observe(ctx, res.Effort, 1, store.ObservedFile, filepath.Join(dir, "x_test.go"), nil, "run_2"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Log(ctx, f.alice, "chose x"); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"1_IMPLEMENT_PLAN.md": "# Plan\n", "2_IMPLEMENT_PLAN.md": "another effort's", "notes.md": "not an artifact"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(f.project, "secret.md")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The debrief is a link out of the directory: not shown, not read.
	if err := os.Symlink(secret, filepath.Join(dir, "1_IMPLEMENT.md")); err != nil {
		t.Fatal(err)
	}

	show, err := f.svc.Show(ctx, res.Effort, nil)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, p := range show.Timeline {
		phases = append(phases, p.Name)
	}
	if diff := cmp.Diff([]string{"plan", "test-first", "implement", "verify"}, phases); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
	if show.Timeline[0].Proof[0].Name != "plan_summary" || show.Timeline[0].Artifacts[0] != "1_IMPLEMENT_PLAN.md" || len(show.Timeline[3].Evidence) != 2 {
		t.Errorf("timeline = %+v", show.Timeline)
	}
	var obs []string
	for _, o := range show.Observations {
		exit := "-"
		if o.Exit != nil {
			exit = "0"
		}
		obs = append(obs, strings.Join([]string{string(rune('0' + o.Phase)), o.Kind, strings.TrimPrefix(o.Subject, dir+"/"), exit, o.Run}, " "))
	}
	if diff := cmp.Diff([]string{"1 shell go list ./... 0 run_1", "2 file x_test.go - run_2"}, obs); diff != "" {
		t.Errorf("observations (-want +got):\n%s", diff)
	}
	var names []string
	for _, a := range show.Artifacts {
		names = append(names, a.Kind+" "+a.Name)
	}
	if diff := cmp.Diff([]string{"plan 1_IMPLEMENT_PLAN.md", "log 1_IMPLEMENT_LOG.md"}, names); diff != "" {
		t.Errorf("artifacts (-want +got):\n%s", diff)
	}

	plan, err := f.svc.Artifact(ctx, res.Effort, "1_IMPLEMENT_PLAN.md")
	if err != nil || plan.Content != "# Plan\n" || plan.Kind != "plan" || plan.Dir != dir {
		t.Errorf("the plan = %+v, %v", plan, err)
	}
	for name, text := range map[string]string{
		"notes.md":                "has no artifact \"notes.md\": its artifacts are 1_IMPLEMENT_PLAN.md, 1_IMPLEMENT_LOG.md, 1_IMPLEMENT.md",
		"2_IMPLEMENT_PLAN.md":     "has no artifact",
		"../secret.md":            "has no artifact",
		"/etc/passwd":             "has no artifact",
		"1_IMPLEMENT.md":          "cannot be read",
		"":                        "has no artifact",
		"src/1_IMPLEMENT_PLAN.md": "has no artifact",
	} {
		_, err := f.svc.Artifact(ctx, res.Effort, name)
		wantErr(t, name, err, contract.CodeNotFound, text)
	}
	_, err = f.svc.Artifact(ctx, "effort-9", "1_IMPLEMENT_PLAN.md")
	wantErr(t, "another effort", err, contract.CodeNotFound, "effort-9")
}
