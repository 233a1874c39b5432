package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/sdk/sandbox/sandboxtest"
)

// attackLine is a shell line that runs this test binary as the probe
// (sandboxtest.MaybeAttack) of names against port.
func attackLine(exe string, port int, names ...string) string {
	return fmt.Sprintf("%s=%s %s=%d %s", sandboxtest.AttackEnv, strings.Join(names, ","), sandboxtest.AttackPortEnv, port, exe)
}

// A run's tool command is refused what Landlock alone let through on this
// kernel (issue 40): a socket made through io_uring (IORING_OP_SOCKET)
// reached a local port over Multipath TCP and UDP, and a run of a root
// daemon made a block device node for the root disk in its worktree. A
// mock agent's shell steps run this test binary as the probe: io_uring
// itself, TCP, Multipath TCP and UDP through a ring and through socket(2),
// a raw socket, an abstract unix socket of the test's, device nodes and
// typing into a terminal are refused,
// while a FIFO, a pseudo-terminal of its own, node and python, and the
// run's own work and MCP calls succeed. It runs twice: in a process
// started for the run and in a warm spare.
func TestE2ESandboxKernelAttacks(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	if b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil && strings.TrimSpace(string(b)) != "0" {
		t.Logf("io_uring is disabled here (kernel.io_uring_disabled=%s): the ring attacks are refused by the kernel too", strings.TrimSpace(string(b)))
	}
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	c.startDaemon()
	leakPort, canary := listenLeak(t)
	udpPort, udpGot := listenUDP(t)
	sandboxtest.ListenAbstract(t, uint16(leakPort))

	const eperm, eacces = "operation not permitted", "permission denied"
	want := map[string]string{
		"io_uring":       "refused: io_uring_setup: " + eperm,
		"io_uring-tcp":   "refused: io_uring_setup: " + eperm,
		"io_uring-mptcp": "refused: io_uring_setup: " + eperm,
		"io_uring-udp":   "refused: io_uring_setup: " + eperm,
		"tcp":            "refused: socket: " + eacces, // a tool command has no port: no IPv4 or IPv6 socket
		"mptcp":          "refused: socket: " + eacces,
		"udp":            "refused: socket: " + eacces,
		"raw":            "refused: socket: " + eacces,
		"mknod-block":    "refused: " + eperm,
		"mknod-char":     "refused: " + eperm,
		"mkfifo":         "reached",
		"pty":            "reached",
		"tiocsti":        "refused: TIOCSTI: " + eperm,
		"abstract-unix":  "refused: connect: " + eperm, // Landlock's scope keeps it inside the run
	}
	script := []map[string]any{
		{"shell": attackLine(exe, leakPort, "io_uring", "io_uring-tcp", "io_uring-mptcp", "tcp", "mptcp", "raw", "abstract-unix")},
		{"shell": attackLine(exe, udpPort, "io_uring-udp", "udp")},
		{"shell": attackLine(exe, 0, "mknod-block", "mknod-char", "mkfifo", "pty", "tiocsti") + " && ls -l fifo"},
		{"shell": "echo mine > mine.txt && cat mine.txt"},
	}
	tools := map[string]string{} // what node and python print when they work
	if _, err := exec.LookPath("node"); err == nil {
		script = append(script, map[string]any{"shell": `node -e 'const fs=require("fs"),cp=require("child_process");` +
			`fs.writeFileSync("n.txt","node wrote");console.log(fs.readFileSync("n.txt","utf8")+", "+cp.execSync("echo and ran").toString().trim())'`})
		tools["node"] = "node wrote, and ran"
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil { // not a shim in the user's home, which the run cannot read
		script = append(script, map[string]any{"shell": `/usr/bin/python3 -c 'import os; m, s = os.openpty(); print("python pty", os.isatty(s), os.ttyname(s).startswith("/dev/pts/"))'`})
		tools["python"] = "python pty True True"
	}
	script = append(script,
		map[string]any{"tool": "channel_send", "args": map[string]any{"message": "prober posts through the daemon"}},
		map[string]any{"result": "probed"})
	cfg, _ := json.Marshal(map[string]any{"script": script, "sandbox": map[string]any{"read": []string{filepath.Dir(exe)}}})
	c.ok("new", "prober", "--backend", "mock", "--config", string(cfg))
	work := filepath.Join(realPath(t, c.home), "workspaces", "global", "main", "prober")

	for attempt := 1; attempt <= 2; attempt++ {
		os.Remove(filepath.Join(work, "fifo"))
		c.ok("ask", "prober", "attack your sandbox")
		a := c.agent("prober")
		if len(a.Runs) < attempt || a.Runs[0].State != "succeeded" {
			t.Fatalf("run %d of prober: %+v", attempt, a.Runs)
		}
		logs := c.ok("logs", a.Runs[0].ID)
		for name, w := range want {
			if !strings.Contains(logs, name+": "+w) {
				t.Errorf("run %d: %s: want %q in the transcript:\n%s", attempt, name, name+": "+w, logs)
			}
		}
		if strings.Contains(logs, canary) {
			t.Errorf("run %d reached a local port:\n%s", attempt, logs)
		}
		for _, node := range []string{"disk", "mem"} {
			if _, err := os.Lstat(filepath.Join(work, node)); err == nil {
				t.Errorf("run %d made the device node %s in its worktree", attempt, node)
			}
		}
		if fi, err := os.Lstat(filepath.Join(work, "fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("run %d made no FIFO in its worktree: %v", attempt, err)
		}
		for _, own := range []string{"mine\n", "prober posts through the daemon"} {
			if !strings.Contains(logs, own) {
				t.Errorf("run %d did not do its own work (%q missing):\n%s", attempt, own, logs)
			}
		}
		for tool, out := range tools {
			if !strings.Contains(logs, out) {
				t.Errorf("run %d: %s does not work in the sandbox (%q missing):\n%s", attempt, tool, out, logs)
			}
		}
	}
	if n := udpGot(); n > 0 {
		t.Errorf("the UDP listener got %d datagrams from the runs", n)
	}
	if out := c.ok("peek"); !strings.Contains(out, "prober posts through the daemon") {
		t.Errorf("the channel lacks prober's posts:\n%s", out)
	}
	c.waitFor("plugins to show the second run took a spare", func() bool { return strings.Contains(c.ok("plugins"), "1/2 used, 1 cold") })
	t.Logf("the last transcript:\n%s", c.ok("logs", c.agent("prober").Runs[0].ID))
}
