package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// The bash script of `completion bash`, sourced in a real bash, completes
// commands, and agent names, workflow targets and run ids from the running
// daemon; with none running it completes the tree and starts no daemon.
func TestE2ECompletionBash(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash on this machine")
	}
	c := newCLI(t)
	script := filepath.Join(t.TempDir(), "agent-worker.bash")
	if err := os.WriteFile(script, []byte(c.ok("completion", "bash")), 0o600); err != nil {
		t.Fatal(err)
	}
	// complete is bash doing what it does on Tab after line: COMP_* set,
	// the function called, COMPREPLY printed one a line.
	complete := func(line string) []string {
		t.Helper()
		words := strings.Fields(line)
		cword := len(words) - 1
		if strings.HasSuffix(line, " ") {
			cword++
		}
		prog := `source "$1"; COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<<"$2"; COMP_CWORD=$3
_agent_worker; printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command("bash", "--norc", "--noprofile", "-c", prog, "bash", script, line, strconv.Itoa(cword))
		cmd.Env = append(c.env(), "PATH="+filepath.Dir(binary)+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash completing %q: %v\n%s", line, err, out)
		}
		return strings.Fields(string(out))
	}
	want := func(line string, want ...string) {
		t.Helper()
		got := complete(line)
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("completing %q gave %q, want %q among them", line, got, w)
			}
		}
		if len(want) == 0 && len(got) != 0 {
			t.Errorf("completing %q gave %q, want nothing", line, got)
		}
	}

	// No daemon: the tree still completes, nothing is asked, none started.
	want("agent-worker pe", "peek")
	want("agent-worker doc r", "read")
	want("agent-worker info ")
	if _, err := os.Stat(filepath.Join(c.home, api.DaemonFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("completion started a daemon: %v", err)
	}

	c.startDaemon()
	c.ok("new", "pearl", "--backend", "mock")
	c.ok("new", "reviewer@review:pr-1", "--backend", "mock")
	c.ok("ask", "pearl", "hi")
	var runs api.RunList
	if err := json.Unmarshal([]byte(c.ok("runs", "pearl", "--json")), &runs); err != nil || len(runs.Runs) == 0 {
		t.Fatalf("runs pearl --json: %+v, %v; want pearl's run", runs, err)
	}
	runID := runs.Runs[0].ID

	want("agent-worker pe", "peek")
	want("agent-worker info pe", "pearl")
	want("agent-worker ask p", "pearl")
	want("agent-worker send ", "pearl", "reviewer@review:pr-1", "@review:pr-1")
	// bash replaces only what follows the colon it splits words at.
	want("agent-worker stop @review:p", "pr-1")
	want("agent-worker logs ", runID)
	want("agent-worker runs --f", "--failed")
	if got := complete("agent-worker ask pearl "); len(got) != 0 {
		t.Errorf("the message of ask completes to %q, want nothing", got)
	}
}

// The zsh and fish scripts parse in their shells and complete a command
// and a subcommand there: fish is asked for a line's completions (complete
// -C); zsh's function runs with its completion builtins stubbed to print
// what they were given, as only an interactive zsh has them.
func TestE2ECompletionZshFish(t *testing.T) {
	t.Parallel()
	c := &cli{t: t, home: t.TempDir()}
	tests := map[string]struct {
		complete string   // a program given the script as its first argument
		want     []string // lines it prints
	}{
		"zsh": {`compdef() { :; }; _describe() { print -rl -- "${(@P)4}"; }; _files() { print FILES; }
source $1
words=(agent-worker pe); CURRENT=2; _agent-worker
words=(agent-worker doc ""); CURRENT=3; _agent-worker
words=(agent-worker run ""); CURRENT=3; _agent-worker`,
			[]string{"peek:show a channel", "read:print a document", "FILES"}},
		"fish": {`source $argv[1]; complete -C "agent-worker pe"; complete -C "agent-worker doc "`,
			[]string{"peek\tshow a channel", "read\tprint a document"}},
	}
	for sh, tc := range tests {
		t.Run(sh, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(sh); err != nil {
				t.Skipf("no %s on this machine (apt-get install %s to run this test)", sh, sh)
			}
			script := filepath.Join(t.TempDir(), "agent-worker."+sh)
			if err := os.WriteFile(script, []byte(c.ok("completion", sh)), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(sh, "-n", script).CombinedOutput(); err != nil {
				t.Fatalf("%s -n rejects the script: %v\n%s", sh, err, out)
			}
			args := []string{"-f", "-c", tc.complete, sh, script}
			if sh == "fish" {
				args = []string{"--no-config", "-c", tc.complete, script}
			}
			cmd := exec.Command(sh, args...)
			cmd.Env = append(c.env(), "PATH="+filepath.Dir(binary)+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s completing: %v\n%s", sh, err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("%s completes\n%s\nwant a line with %q", sh, out, w)
				}
			}
		})
	}
}
