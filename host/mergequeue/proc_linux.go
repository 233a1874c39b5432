package mergequeue

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// checkProcAttr puts a check in a process group of its own, killed whole
// at its timeout, and has the kernel tell its guard (checkGuard) if the
// daemon dies, which then kills the group.
func checkProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// endLeftovers kills what an earlier check in dir left running, read from
// /proc: every process that carries dir in its checkMarker variable (a
// check's environment, inherited by all it starts), and the process
// groups they are in. A daemon that died
// (kill -9) leaves a check's children behind: Pdeathsig ends the shell
// only, and where the daemon has no cgroups nothing else ends the rest.
// It returns how many processes it killed, once they are gone (or
// leftoverGrace has passed).
func endLeftovers(dir string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	marker := []byte(checkMarker + "=" + dir + "\x00")
	self := os.Getpid()
	var killed []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if !bytes.Contains(env, marker) {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		killed = append(killed, pid)
	}
	deadline := time.Now().Add(leftoverGrace)
	for _, pid := range killed {
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // another process's death has no event to wait on
		}
	}
	return len(killed)
}

// leftoverGrace bounds endLeftovers' wait for the kernel to end what it
// killed.
const leftoverGrace = 5 * time.Second

// running says whether pid is a process that has not exited (a zombie
// waiting to be reaped has).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
}
