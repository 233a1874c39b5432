package workflow

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// skills: folders and an agent's effort: come back absolute, anchored at
// the workflow file; a mistake is reported at its line.
func TestSkillsAndEffort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "wf.yaml")
	f, err := Parse(path, []byte("skills: [skills, /opt/skills]\nagents:\n  a: {backend: mock, effort: {dir: src, skill: implement}}\n  b: {backend: mock}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Join(dir, "skills"), "/opt/skills"}, f.Skills); diff != "" {
		t.Errorf("Skills (-want +got):\n%s", diff)
	}
	want := &AgentEffort{Dir: filepath.Join(dir, "src"), Skill: "implement", Line: 3}
	if diff := cmp.Diff(want, f.Agents[0].Effort); diff != "" {
		t.Errorf("Effort (-want +got):\n%s", diff)
	}
	if f.Agents[1].Effort != nil {
		t.Errorf("b's Effort = %+v, want none", f.Agents[1].Effort)
	}
	for src, want := range map[string]string{
		"skills: skills\nagents: {a: {backend: mock}}\n":                              "wf.yaml:1:9: skills must be a list of folders",
		"skills: ['${{ params.x }}']\nagents: {a: {backend: mock}}\n":                 "wf.yaml:1:10: skills: folders are taken as written",
		"agents: {a: {backend: mock, effort: {dir: .}}}\n":                            "wf.yaml:1:37: effort needs skill:",
		"agents: {a: {backend: mock, effort: {skill: implement}}}\n":                  "wf.yaml:1:37: effort needs dir:",
		"agents: {a: {backend: mock, effort: {dir: ., skill: implement, mode: x}}}\n": `unknown key "mode" in agent a effort`,
		"agents: {a: {backend: mock, effort: implement}}\n":                           "wf.yaml:1:37: effort must be a map",
	} {
		_, err := Parse("wf.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}
