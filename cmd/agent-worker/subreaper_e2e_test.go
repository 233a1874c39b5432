package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Where the daemon can make no cgroup, each plugin process is a child
// subreaper: a child that leaves the run's process group and session
// (setsid) still ends with its run, with a daemon killed mid-run and with
// stop --all, and status names the mechanism (issue 27, item 5).
func TestE2ESessionLeaversEndWithTheRunWithoutCgroups(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := c.startDaemon(testNoCgroups + "=disabled by the test")
	if status := c.ok("status"); !strings.Contains(status, "processes: subreaper: no cgroup v2 here (disabled by the test)") {
		t.Fatalf("status does not name the subreaper:\n%s", status)
	}
	escape := `setsid sh -c 'exec sleep 300' </dev/null >/dev/null 2>&1 & echo $! > escaped.pid`
	home := realPath(t, c.home)
	escaped := func(agent string) int {
		b, _ := os.ReadFile(filepath.Join(home, "workspaces", "global", "main", agent, "escaped.pid"))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return pid
	}
	cfg, _ := json.Marshal(map[string]any{"script": []map[string]any{{"shell": escape}, {"result": "left a child"}}})
	c.ok("new", "leaver", "--backend", "mock", "--config", string(cfg))
	c.ok("ask", "leaver", "go")
	pid := escaped("leaver")
	if pid == 0 {
		t.Fatal("the run left no pid of its escaped child")
	}
	c.waitFor(fmt.Sprintf("the escaped child %d to end with its run", pid), func() bool { return processGone(pid) })

	// A daemon killed mid-run: the plugin's parent-death signal makes it
	// end what it reaped before it dies.
	cfg, _ = json.Marshal(map[string]any{"script": []map[string]any{{"shell": escape}, {"hang": true}}})
	c.ok("new", "hanger", "--backend", "mock", "--config", string(cfg))
	c.ok("send", "hanger", "go")
	c.waitFor("the hanging run's escaped child", func() bool { return escaped("hanger") != 0 })
	pid = escaped("hanger")
	c.waitEscaped(pid)
	if err := daemon.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()
	c.waitFor(fmt.Sprintf("the escaped child %d to end with the killed daemon's run", pid), func() bool { return processGone(pid) })

	// The run starts again under a new daemon; stop --all ends its child.
	os.Remove(filepath.Join(home, "workspaces", "global", "main", "hanger", "escaped.pid"))
	c.startDaemon(testNoCgroups + "=disabled by the test")
	c.waitFor("the new run's escaped child", func() bool { p := escaped("hanger"); return p != 0 && !processGone(p) })
	pid = escaped("hanger")
	c.ok("stop", "--all")
	c.waitFor(fmt.Sprintf("stop --all to end the escaped child %d", pid), func() bool { return processGone(pid) })
}
