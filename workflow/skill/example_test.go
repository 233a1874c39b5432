package skill

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExampleSkill parses examples/skills/implement/SKILL.md, the skill
// the guides and the end-to-end tests walk.
func TestExampleSkill(t *testing.T) {
	t.Parallel()
	s, err := Load(filepath.Join("..", "..", "examples", "skills", "implement", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"plan", "test-first", "implement", "verify"}, s.PhaseNames()); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	plan, verify := s.Phase("plan"), s.Phase("verify")
	if got := plan.Check(Call{Tool: "write_file", Path: "main.go"}); got.Allowed {
		t.Error("plan allows write_file")
	}
	if got := plan.Check(Call{Tool: "run_shell", Command: "git commit -am wip"}); got.Allowed {
		t.Error("plan allows git commit")
	}
	if got := plan.Check(Call{Tool: "run_shell", Command: "go test ./..."}); !got.Allowed {
		t.Errorf("plan refuses go test: %s", got.Reason)
	}
	if _, err := plan.CheckProof(map[string]any{"plan_summary": "add a flag"}); err != nil {
		t.Error(err)
	}
	if diff := cmp.Diff([]string{"plan"}, plan.Artifacts); diff != "" {
		t.Errorf("plan artifacts (-want +got):\n%s", diff)
	}
	want := []Evidence{{Kind: EvidenceShell, Pattern: "go test ./..."}, {Kind: EvidenceShell, Pattern: "go vet ./..."}}
	if diff := cmp.Diff(want, verify.Evidence); diff != "" {
		t.Errorf("verify evidence (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"debrief"}, verify.Artifacts); diff != "" {
		t.Errorf("verify artifacts (-want +got):\n%s", diff)
	}
	if got, want := s.Expand(plan.Instructions, 2), "2_IMPLEMENT_PLAN.md"; !strings.Contains(got, want) {
		t.Errorf("plan instructions expanded: %q lacks %q", got, want)
	}
	if s.Next[0] != "review" || s.Directives[0] != "AGENTS.md" {
		t.Errorf("next %v, directives %v", s.Next, s.Directives)
	}
}
