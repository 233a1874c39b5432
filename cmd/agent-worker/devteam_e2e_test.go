package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The dev-team example as its README shows it: try.sh makes a throwaway
// git repository and runs the team there on mock backends. The planner's
// three tasks are all completed, each worker committed in its own worktree,
// the planner's integrates went through the merge queue (test.sh passed on
// the merge before main moved), and main holds both merges and both
// scripts.
func TestE2EDevTeamExample(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the dev-team example needs it")
	}
	c := newCLI(t)
	script, err := filepath.Abs("../../examples/dev-team/try.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script)
	cmd.Env = append(c.env(), "AGENT_WORKER="+binary, "TMPDIR="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("try.sh: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	got := out.String()
	for _, want := range []string{
		`task-1 "add greet.sh" is ready for alice`,
		"task-1 completed by alice: add greet.sh",
		"task-2 completed by bob: add farewell.sh",
		`task-3 "merge greet.sh and farewell.sh into main" is ready for planner`,
		"alice's branch aw/dev-team/main/alice is in the merge queue of main as mq-1 (asked by planner; 0 ahead of it)",
		"bob's branch aw/dev-team/main/bob is in the merge queue of main as mq-2 (asked by planner",
		"@alice @planner mq-1 landed on main as commit",
		"@bob @planner mq-2 landed on main as commit",
		"the merge queue, every entry:",
		"mq-2  landed  bob@dev-team:main",
		"task-3 completed by planner",
		"@dev-team: 3 task(s), 3 completed",
		"Merge branch 'aw/dev-team/main/alice' into main",
		"add greet.sh (alice)",
		"add farewell.sh (bob)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("try.sh output lacks %q:\n%s", want, got)
		}
	}
	m := regexp.MustCompile(`a throwaway repository: (\S+)`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("try.sh did not name its repository:\n%s", got)
	}
	repo := m[1]
	for file, says := range map[string]string{"greet.sh": "hello, world", "farewell.sh": "goodbye"} {
		b, err := os.ReadFile(filepath.Join(repo, file))
		if err != nil || !strings.Contains(string(b), says) {
			t.Errorf("%s in the user's checkout of main: %q, %v", file, b, err)
		}
	}
	// The user's checkout is clean: the merges came in as commits.
	status, err := exec.Command("git", "-C", repo, "status", "--porcelain").Output()
	if err != nil || len(status) != 0 {
		t.Errorf("git status in the user's checkout: %q, %v", status, err)
	}
}
