package main

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
	"github.com/agent-worker/agent-worker/store"
)

// Warm spares are recorded like runs, so a daemon killed with SIGKILL
// leaves none behind: they die with it (their parent-death signal), and
// the next daemon reaps what the old one recorded, killing any spare still
// alive (host's TestReapKillsASpareLeftBehind keeps one alive to see it).
func TestE2ESparesReapedAfterDaemonKill(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := c.startDaemon("AGENT_WORKER_SPARES=2")
	c.ok("new", "alice", "--backend", "mock")
	c.ok("ask", "alice", "hello") // the backend's first run starts cold and brings its spares
	var spares []int
	c.waitFor("two warm spares", func() bool {
		spares = childrenRunning(t, daemon.Process.Pid, mockPlugin)
		return len(spares) == 2
	})
	c.waitFor("plugins to count them", func() bool { return strings.Contains(c.ok("plugins"), "2 live, 0/2 used, 1 cold") })

	if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()
	if got := spareRows(t, c.home); !sameInts(got, spares) {
		t.Fatalf("spare rows after the kill = %v, want the spares %v", got, spares)
	}
	c.ok("status") // stale daemon.json: nothing runs
	c.ok("list")   // starts a new daemon, which reaps what the old one recorded
	for _, pid := range spares {
		c.waitFor("spare "+strconv.Itoa(pid)+" to be gone", func() bool { return !api.ProcessAlive(pid) })
	}
	if got := spareRows(t, c.home); len(got) != 0 {
		t.Errorf("spare rows after the restart = %v, want none", got)
	}
}

// spareRows reads the pids of the spares recorded in home's database.
func spareRows(t *testing.T, home string) []int {
	t.Helper()
	db, err := store.Open(t.Context(), filepath.Join(home, api.DBFile), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ws, err := db.ListWorkers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, w := range ws {
		if w.State == store.WorkerSpare {
			out = append(out, w.PID)
		}
	}
	return out
}

func sameInts(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// childrenRunning lists the live children of parent that run the binary
// at path.
func childrenRunning(t *testing.T, parent int, path string) []int {
	t.Helper()
	return testkit.Pids(t, func(pid int) bool {
		p, ok := testkit.ReadProc(pid)
		return ok && p.PPID == parent && testkit.RunsBinary(pid, path)
	})
}
