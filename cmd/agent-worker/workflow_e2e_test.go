package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// realPath is path with its symbolic links resolved, as the daemon's
// sandbox sees it (t.TempDir may sit behind a link).
func realPath(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// copyExample copies an example into a temp dir, so its documents land
// there and not in the checkout.
func copyExample(t *testing.T, name string) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("..", "..", "examples", name)
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err == nil {
			writeFile(t, filepath.Join(dst, rel), string(b))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestE2EExamplesRunToCompletion(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		file string
		says []string
	}{
		"code-review": {"review.yaml", []string{"→ coder@code-review: team_doc_write", "[coder] @reviewer the plan is in notes.md", "[reviewer] @coder approved", "[coder] thanks, applied"}},
		"decision":    {"decision.yaml", []string{"opened proposal", `voted "postgres"`, `"postgres" wins`, "[lead] Thanks both"}},
		"standup":     {"standup.yaml", []string{"[facilitator] @all standup", "[ana] @facilitator done:", "[ben] @facilitator done:"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t)
			dir := copyExample(t, name)
			r := c.run("run", filepath.Join(dir, tc.file), "--timeout", "60s")
			if r.code != 0 {
				t.Fatalf("run %s: exit %d\nstdout:\n%s\nstderr:\n%s", name, r.code, r.stdout, r.stderr)
			}
			for _, want := range tc.says {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("run %s output lacks %q:\n%s", name, want, r.stdout)
				}
			}
			if !strings.Contains(r.stdout, "run(s), 0 failed") {
				t.Errorf("no summary:\n%s", r.stdout)
			}
			if name == "decision" {
				// The vote stays readable once the run is over, as does
				// who may change the documents.
				out := c.ok("proposals", "@decision")
				for _, want := range []string{`prop-1  resolved  "Database for the new service"`, "options: postgres (2), sqlite (0)",
					"winner:  postgres", "backend-dev → postgres (we need concurrent writers)"} {
					if !strings.Contains(out, want) {
						t.Errorf("proposals output lacks %q:\n%s", want, out)
					}
				}
				if out := c.ok("proposals", "@decision", "--active"); out != "no active proposals in @decision\n" {
					t.Errorf("proposals --active = %q", out)
				}
				if out := c.ok("doc", "list", "@decision"); !strings.HasPrefix(out, "owner: lead (only lead may change documents)\n") {
					t.Errorf("doc list = %q", out)
				}
				if r := c.run("proposals", "lead@decision"); r.code != api.ExitUsage || !strings.Contains(r.stderr, "give @decision") {
					t.Errorf("proposals of an agent: exit %d, stderr %q", r.code, r.stderr)
				}
			}
			if name == "code-review" {
				doc := filepath.Join(dir, ".workflow", "code-review", "main", "documents", "notes.md")
				b, err := os.ReadFile(doc)
				if err != nil || !strings.Contains(string(b), "## Review") {
					t.Errorf("document %s = %q, %v", doc, b, err)
				}
			}
		})
	}
}

func TestE2ERunFailures(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "fails.yaml"), `
agents:
  sad:
    backend: mock
    config: {script: [{fail: "model unreachable", permanent: true}]}
kickoff: "@sad go"
`)
	r := c.run("run", filepath.Join(dir, "fails.yaml"))
	if r.code == 0 || !strings.Contains(r.stderr, "failed agents: sad") {
		t.Errorf("failing agent: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	writeFile(t, filepath.Join(dir, "setup.yaml"), `
agents:
  a: {backend: mock}
setup:
  - shell: echo oops >&2; exit 3
    as: x
kickoff: "@a ${{ x }}"
`)
	r = c.run("run", filepath.Join(dir, "setup.yaml"))
	if r.code == 0 || !strings.Contains(r.stderr, "oops") {
		t.Errorf("failing setup: exit %d, stderr %q", r.code, r.stderr)
	}
	writeFile(t, filepath.Join(dir, "bad.yaml"), "agents:\n  a:\n    backend: mock\n    modle: x\n")
	r = c.run("run", filepath.Join(dir, "bad.yaml"))
	if r.code != 2 || !strings.Contains(r.stderr, "bad.yaml:4") || !strings.Contains(r.stderr, "model") {
		t.Errorf("invalid YAML: exit %d, stderr %q", r.code, r.stderr)
	}
}

// Ctrl-C on run stops the workflow and leaves no plugin process.
func TestE2ERunInterrupted(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "slow.yaml"), `
name: slow
agents:
  sleeper:
    backend: mock
    config: {script: [{hang: true}]}
kickoff: "@sleeper take your time"
`)
	cmd := exec.Command(binary, "run", filepath.Join(dir, "slow.yaml"))
	cmd.Env = c.env()
	var stderr testkit.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// What the run, the agent and the daemon say while it is not running
	// yet, so that a timeout says why.
	testkit.Eventually(t, "the sleeper's run", func() error {
		err := notRunning(c, "sleeper@slow")
		if err == nil {
			return nil
		}
		log, _ := os.ReadFile(filepath.Join(c.home, api.LogDir, "daemon.log"))
		if len(log) > 4000 {
			log = log[len(log)-4000:]
		}
		return fmt.Errorf("%w\nrun's stderr:\n%s\ndaemon log:\n%s", err, stderr.String(), log)
	})
	cmd.Process.Signal(syscall.SIGINT)
	b := make([]byte, 64<<10)
	n, _ := out.Read(b)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("interrupted run: %v, want exit 130\n%s", err, b[:n])
	}
	c.waitFor("no plugin processes of this daemon", func() bool { return notRunning(c, "sleeper@slow") != nil })
	if out := c.ok("info", "@slow"); !strings.Contains(out, "stopped") {
		t.Errorf("workflow after Ctrl-C:\n%s", out)
	}
}

// notRunning is nil when the agent has a run recorded as running, and
// otherwise says what `info` showed instead.
func notRunning(c *cli, agent string) error {
	r := c.run("info", agent, "--json")
	var a api.Agent
	if r.code == 0 && json.Unmarshal([]byte(r.stdout), &a) == nil && len(a.Runs) > 0 && a.Runs[0].State == "running" {
		return nil
	}
	return fmt.Errorf("info %s: exit %d, no run running\n%s%s", agent, r.code, r.stdout, r.stderr)
}

// `run` of a team whose agents answer each other forever ends when the
// loop guard pauses it: exit 1, the guard's notice in the channel, and a
// line saying why the team would not finish.
func TestE2ERunEndsWhenTheLoopGuardPauses(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pingpong.yaml"), `name: pingpong
loop_guard: {max_rounds: 4}
agents:
  alice: {backend: mock, config: {script: [{reply: "@bob ping"}]}}
  bob: {backend: mock, config: {script: [{reply: "@alice pong"}]}}
kickoff: "@alice start"
`)
	r := c.run("run", filepath.Join(dir, "pingpong.yaml"), "--timeout", "60s")
	if r.code != 1 || strings.Count(r.stdout, "[alice] @bob ping")+strings.Count(r.stdout, "[bob] @alice pong") != 4 ||
		!strings.Contains(r.stdout, "@pingpong is paused: 4 messages in a row came from agents") ||
		!strings.Contains(r.stderr, "@pingpong was paused by the loop guard: 4 agent messages in a row, so its team would not finish; it was stopped") {
		t.Errorf("run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
