package testkit

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The helpers here read Linux's /proc, where the daemon runs its plugins.

// Proc is what /proc/<pid>/stat says of a process.
type Proc struct {
	PID, PPID, PGID int
	Comm            string // the command's name, as ps shows it
	State           byte   // R, S, D, Z (ended, not yet reaped), …
	// Start is when the process started, in clock ticks after boot: a pid
	// the kernel gave to another process since has another Start.
	Start uint64
}

// ReadProc reads process pid's stat; ok is false when it is gone.
func ReadProc(pid int) (p Proc, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, false
	}
	// "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Proc{}, false
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return Proc{}, false
	}
	p = Proc{PID: pid, Comm: string(b[open+1 : end]), State: f[0][0]}
	p.PPID, _ = strconv.Atoi(f[1])
	p.PGID, _ = strconv.Atoi(f[2])
	if len(f) > 19 {
		p.Start, _ = strconv.ParseUint(f[19], 10, 64)
	}
	return p, true
}

// Alive reports whether process pid runs: it exists and is not a zombie
// (a zombie has ended; only its parent has not reaped it yet).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, ok := ReadProc(pid)
	return ok && p.State != 'Z' && p.State != 'X'
}

// Ended reports whether the process p once read has ended: gone, a
// zombie, or its pid now another process's (pid_max is 32768 on many
// machines, and a busy one reuses pids within seconds).
func Ended(p Proc) bool {
	now, ok := ReadProc(p.PID)
	return !ok || now.State == 'Z' || now.State == 'X' || now.Start != p.Start
}

// WaitGone waits until process pid has ended, failing t after Deadline.
func WaitGone(t testing.TB, pid int) {
	t.Helper()
	WaitFor(t, fmt.Sprintf("process %d to end", pid), func() bool { return !Alive(pid) })
}

// Pids lists the live processes of this machine that match keep. A /proc
// it cannot read fails t: a test that looks for what is left running must
// not pass because it saw nothing.
func Pids(t testing.TB, keep func(pid int) bool) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("list the processes: %v", err)
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && Alive(pid) && keep(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// RunsBinary reports whether process pid runs the binary at path: it
// executes that file, or was started under that name (argv[0]), as the
// daemon starts a plugin's verified copy.
func RunsBinary(pid int, path string) bool {
	proc := "/proc/" + strconv.Itoa(pid)
	if exe, err := os.Readlink(proc + "/exe"); err == nil && exe == path {
		return true
	}
	b, err := os.ReadFile(proc + "/cmdline")
	argv0, _, _ := strings.Cut(string(b), "\x00")
	return err == nil && argv0 == path
}

// StartDetached starts path in a process group of its own, the way a
// killed daemon leaves a plugin behind, and returns its pid. The process
// is reaped when it ends and killed when the test ends.
func StartDetached(t testing.TB, path string, args ...string) int {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait() // reaps it, so that its end shows as its absence
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd.Process.Pid
}
