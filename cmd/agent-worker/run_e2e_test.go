package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

func (c *cli) client() *api.Client {
	c.t.Helper()
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		c.t.Fatal(err)
	}
	return api.NewClient(d)
}

func TestE2EAskServeAndPlugins(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("new", "alice", "--backend", "mock")
	// ask prints the reply alice wrote in the channel, then the run's
	// result (issue 41, item 8).
	if out, want := c.ok("ask", "alice", "hello there"), regexp.MustCompile(`^#\d+  \[alice\] \[alice\] Processed: user: alice hello there\nalice done\.\n$`); !want.MatchString(out) {
		t.Errorf("ask printed %q, want %s", out, want)
	}
	// serve answers JSON (the seed's contract); --text only the answer.
	var res api.RunResult
	if out := c.ok("serve", "alice", "json please"); json.Unmarshal([]byte(out), &res) != nil ||
		!strings.HasPrefix(res.RunID, "run_") || res.Content != "alice done." || res.Agent != "alice" {
		t.Errorf("serve printed %q, want the JSON response", out)
	}
	if out := c.ok("serve", "alice", "again", "--text"); out != "alice done.\n" {
		t.Errorf("serve --text printed %q", out)
	}
	if out := c.ok("peek"); !strings.Contains(out, "[alice] [alice] Processed: user: alice hello there") {
		t.Errorf("peek after ask:\n%s", out)
	}
	out := c.ok("plugins")
	if !strings.Contains(out, "backend") || !strings.Contains(out, "mock") || !strings.Contains(out, "ok") {
		t.Errorf("plugins printed:\n%s", out)
	}
	c.ok("new", "bad", "--backend", "mock", "--config", `{"script":[{"fail":"no model today","permanent":true}]}`)
	if r := c.run("ask", "bad", "go"); r.code == 0 || !strings.Contains(r.stderr, "no model today") {
		t.Errorf("failing ask: exit %d, stderr %q", r.code, r.stderr)
	}
	c.ok("new", "ext", "--backend", "external")
	if r := c.run("serve", "ext", "go"); r.code != api.ExitUsage || !strings.Contains(r.stderr, "never runs it") {
		t.Errorf("serve external: exit %d, stderr %q", r.code, r.stderr)
	}
}

// kill -9 of the daemon during a run leaves no plugin process and no
// grandchild alive, and the next daemon records the run as failed.
func TestE2EDaemonKilledMidRun(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := c.startDaemon()
	c.ok("new", "alice", "--backend", "mock", "--config", `{"script":[{"spawn":["sleep","300"]},{"hang":true}]}`)
	ask := exec.Command(binary, "ask", "alice", "work forever")
	ask.Env = c.env()
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	defer ask.Wait()
	var plugin, grandchild int
	c.waitFor("the plugin and its child", func() bool {
		for _, pid := range childrenRunning(t, daemon.Process.Pid, mockPlugin) { // the run's, and a warm spare
			if grandchild = childOf(t, pid, "sleep"); grandchild != 0 {
				plugin = pid
				return true
			}
		}
		return false
	})
	if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()
	c.waitFor("plugin "+strconv.Itoa(plugin)+" to die", func() bool { return !api.ProcessAlive(plugin) })
	c.waitFor("grandchild "+strconv.Itoa(grandchild)+" to die", func() bool { return !api.ProcessAlive(grandchild) })

	c.ok("status") // stale daemon.json: nothing runs
	c.ok("list")   // starts a new daemon, which records the lost run and re-queues alice
	runs, err := c.client().ListRuns(context.Background(), "alice")
	if err != nil || len(runs) == 0 || runs[len(runs)-1].State != "failed" || !strings.Contains(runs[len(runs)-1].Error, "daemon stopped") {
		t.Errorf("runs after restart = %+v, %v", runs, err)
	}
	c.ok("stop", "alice") // its script hangs again
}

// processWithExe finds a live process of the plugin binary at path: the
// daemon executes the plugin's verified copy under that name (argv[0]).
func processWithExe(t *testing.T, path string) int {
	t.Helper()
	if pids := testkit.Pids(t, func(pid int) bool { return testkit.RunsBinary(pid, path) }); len(pids) > 0 {
		return pids[0]
	}
	return 0
}

// childOf finds a live child of parent whose command name is comm.
func childOf(t *testing.T, parent int, comm string) int {
	t.Helper()
	pids := testkit.Pids(t, func(pid int) bool {
		p, ok := testkit.ReadProc(pid)
		return ok && p.PPID == parent && p.Comm == comm
	})
	if len(pids) > 0 {
		return pids[0]
	}
	return 0
}

// A third-party plugin, built in its own module against the sdk alone,
// dropped into a running daemon's plugins.d, runs an agent.
func TestE2EThirdPartyPlugin(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.startDaemon()
	dir := c.home + "/plugins.d"
	tmp := dir + "/.agent-worker-backend-echo.tmp"
	build := exec.Command("go", "build", "-o", tmp, ".")
	build.Dir = "../../examples/backend-echo"
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example plugin: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir+"/agent-worker-backend-echo"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the echo plugin in `agent-worker plugins`", func() bool {
		var l api.PluginList
		if json.Unmarshal([]byte(c.ok("plugins", "--json")), &l) != nil {
			return false
		}
		for _, p := range l.Plugins {
			if p.Name == "echo" && p.Error == "" && p.Version == "1.0.0" {
				return true
			}
		}
		return false
	})
	c.ok("new", "parrot", "--backend", "echo")
	if out := c.ok("serve", "parrot", "say cheese", "--text"); out != "echoed 1 message(s)\n" {
		t.Errorf("serve printed %q", out)
	}
	if out := c.ok("peek"); !strings.Contains(out, "[parrot] echo: parrot say cheese") {
		t.Errorf("peek:\n%s", out)
	}
}
