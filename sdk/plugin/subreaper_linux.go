package plugin

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// becomeSubreaper makes this process a child subreaper when the daemon
// asks (backend.EnvSubreaper): orphans of its descendants come to it, so
// that endDescendants finds them however they left the process group.
func becomeSubreaper() bool {
	if os.Getenv(backend.EnvSubreaper) != "1" {
		return false
	}
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil
}

// endDescendantsWithin bounds endDescendants: a fork bomb is outpaced by
// SIGKILL in practice, and the daemon's own kill follows anyway.
const endDescendantsWithin = 2 * time.Second

// endDescendants kills every process below this one and reaps them. As a
// subreaper it sees them all: a process whose parent died was reparented
// here. It repeats until none is left, since a process may fork while the
// others die.
func endDescendants() {
	self := os.Getpid()
	deadline := time.Now().Add(endDescendantsWithin)
	for time.Now().Before(deadline) {
		live, zombies := descendants(self)
		for _, pid := range live {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(live) == 0 && len(zombies) == 0 {
			return
		}
		reapChildren()
		if len(live) > 0 {
			time.Sleep(5 * time.Millisecond) // another process's death has no event to wait on
		}
	}
}

// reapChildren collects every child of this process that has exited.
func reapChildren() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// descendants lists the processes below root, read from /proc: those
// still running and those that have exited and wait to be reaped.
func descendants(root int) (live, zombies []int) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil
	}
	children := map[int][]int{}
	zombie := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, state, ok := procStat(pid)
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		zombie[pid] = state == 'Z'
	}
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if zombie[c] {
				zombies = append(zombies, c)
			} else {
				live = append(live, c)
			}
			queue = append(queue, c)
		}
	}
	return live, zombies
}

// procStat reads a process's parent and state from /proc/<pid>/stat, whose
// second field (the command, in parentheses) may hold any character.
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, 0, false
	}
	fields := strings.Fields(s[i+2:])
	if len(fields) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return ppid, fields[0][0], err == nil
}
