package skill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeSkill(t *testing.T, dir, folder, name, extra string) string {
	t.Helper()
	path := filepath.Join(dir, folder, FileName)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	content := "---\nname: " + name + "\ndescription: " + dir + "\nphases: [{name: one}]\n" + extra + "---\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDiscover: the first folder wins a name clash (the other is a
// warning), a bad file is a problem while the others load, a missing
// folder holds nothing, and a skill's folder is named after it.
func TestDiscover(t *testing.T) {
	t.Parallel()
	wf, project, home := t.TempDir(), t.TempDir(), t.TempDir()
	writeSkill(t, wf, "implement", "implement", "next: [review, nowhere]\n")
	shadowed := writeSkill(t, project, "implement", "implement", "")
	writeSkill(t, project, "review", "review", "")
	bad := writeSkill(t, home, "broken", "broken", "phases: twice\n")
	misnamed := writeSkill(t, home, "debug", "debugging", "")
	writeSkill(t, home, ".hidden", "hidden", "")
	if err := os.MkdirAll(filepath.Join(home, "notes"), 0o755); err != nil { // no SKILL.md
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "loose.md"), []byte("# not a skill\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	set := Discover([]string{wf, filepath.Join(wf, "missing"), project, home})
	if diff := cmp.Diff([]string{"implement", "review"}, set.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if got := set.Get("implement"); got == nil || got.Description != wf {
		t.Errorf("implement comes from %+v, want the first folder", got)
	}
	if set.Get("nope") != nil || set.Closest("implment") != "implement" {
		t.Error("Get or Closest of an unknown skill")
	}
	var problems []string
	for _, p := range set.Problems {
		problems = append(problems, p.String())
	}
	wantProblems := []string{
		bad + ":5:1: duplicate key \"phases\" in the front matter (first at line 4): remove one",
		misnamed + ":2: skill debugging is in the folder debug: a skill's folder is named after it; rename one",
	}
	if diff := cmp.Diff(wantProblems, problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	var warnings []string
	for _, w := range set.Warnings {
		warnings = append(warnings, strings.ReplaceAll(w.String(), wf, "WF"))
	}
	wantWarnings := []string{
		strings.ReplaceAll(shadowed, wf, "WF") + ": skill implement is shadowed by WF/implement/SKILL.md, which comes first",
		"WF/implement/SKILL.md: next: skill nowhere is not in any skills folder",
	}
	if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
