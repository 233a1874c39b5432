package skill

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/workflow"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestGolden parses each testdata/*.md and compares its problems (or "ok"
// and its phases) with the .golden file beside it.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.md: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".md"), func(t *testing.T) {
			t.Parallel()
			content, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			s, err := Parse(filepath.Base(file), content)
			if err != nil {
				var ps workflow.Problems
				if !errors.As(err, &ps) {
					t.Fatalf("Parse returned %T, want workflow.Problems: %v", err, err)
				}
				got = err.Error() + "\n"
			} else {
				got = "ok: " + s.Name + " (" + strings.Join(s.PhaseNames(), ", ") + ")\n"
			}
			golden := strings.TrimSuffix(file, ".md") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./workflow/skill -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// TestParseKeepsTheBody checks the Markdown after the front matter is the
// skill's body and the common keys of other tools are ignored.
func TestParseKeepsTheBody(t *testing.T) {
	t.Parallel()
	s, err := Parse("", []byte("\ufeff---\r\nname: a\r\ndescription: b\r\nallowed-tools: Read\r\nx-custom: 1\r\nphases: [{name: one}]\r\n---\r\n\r\n# Title\r\ntext\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Body != "# Title\r\ntext\r\n" {
		t.Errorf("body %q", s.Body)
	}
	if s.Path != "" || s.Phases[0].Skill() != s || s.Phases[0].Index != 0 {
		t.Errorf("path %q, phase %+v", s.Path, s.Phases[0])
	}
}

// A snapshot parses back to the same skill, the bare content too.
func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	content, err := os.ReadFile("../../examples/skills/implement/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{
		"snapshot": Snapshot("/x/implement/SKILL.md", content),
		"string":   func() []byte { b, _ := json.Marshal(string(content)); return b }(),
	} {
		sk, err := FromSnapshot(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := strings.Join(sk.PhaseNames(), ","); got != "plan,test-first,implement,verify" {
			t.Errorf("%s: phases %s", name, got)
		}
	}
	if _, err := FromSnapshot([]byte(`[1]`)); err == nil {
		t.Error("a list parsed as a snapshot")
	}
}

// TestHeartbeatEvery: a phase's own heartbeat wins over the skill's, 0
// turns it off, and a skill without one has it off.
func TestHeartbeatEvery(t *testing.T) {
	t.Parallel()
	content, err := os.ReadFile("testdata/heartbeat.md")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("heartbeat.md", content)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, p := range s.Phases {
		got[p.Name] = p.HeartbeatEvery()
	}
	if diff := cmp.Diff(map[string]int{"explore": 0, "build": 5}, got); diff != "" {
		t.Errorf("every (-want +got)\n%s", diff)
	}
	if r := s.Phase("build").HeartbeatReason(5, "me"); !strings.HasPrefix(r, "log your progress first (the effort_log tool") || !strings.Contains(r, "--agent me") || !strings.Contains(r, "every 5") {
		t.Errorf("reason %q", r)
	}
	plain, err := Parse("", []byte("---\nname: x\ndescription: y\nphases: [{name: a}]\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n := plain.Phases[0].HeartbeatEvery(); n != 0 {
		t.Errorf("no heartbeat key: every %d, want 0 (off)", n)
	}
}
