package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
)

// Every plugin process gets a private socket directory under the runtime
// dir, named aw-<daemon pid>-<use>-<random>. A daemon killed with -9
// cannot remove those of its plugins; the pid in the name lets the next
// daemon tell them from those of a daemon that still runs (the runtime
// dir is usually $TMPDIR, which other daemons share).
var socketDirName = regexp.MustCompile(`^aw-([0-9]+)-(run|spare|fp|docs)-[0-9]+$`)

// liveSocketDirs are the directories this process made and has not
// removed yet: several hosts in one process (tests) share a pid.
var liveSocketDirs struct {
	sync.Mutex
	dirs map[string]bool
}

// MakeSocketDir creates a socket directory for one plugin process; use
// says what for (run, fp, docs). RemoveSocketDir removes it.
func MakeSocketDir(runtime, use string) (string, error) {
	liveSocketDirs.Lock()
	defer liveSocketDirs.Unlock()
	dir, err := os.MkdirTemp(runtime, fmt.Sprintf("aw-%d-%s-", os.Getpid(), use))
	if err != nil {
		return "", fmt.Errorf("plugin socket dir: %w", err)
	}
	if liveSocketDirs.dirs == nil {
		liveSocketDirs.dirs = map[string]bool{}
	}
	liveSocketDirs.dirs[dir] = true
	return dir, nil
}

// RemoveSocketDir removes a directory MakeSocketDir made.
func RemoveSocketDir(dir string) {
	_ = os.RemoveAll(dir)
	liveSocketDirs.Lock()
	delete(liveSocketDirs.dirs, dir)
	liveSocketDirs.Unlock()
}

// CleanSocketDirs removes the socket directories under runtime that
// daemons which are gone left behind; it runs at start-up. Only names of
// our pattern are touched, and never one whose daemon still runs.
func CleanSocketDirs(runtime string, log hclog.Logger) {
	entries, err := os.ReadDir(runtime)
	if err != nil {
		log.Warn("read runtime dir", "dir", runtime, "error", err)
		return
	}
	liveSocketDirs.Lock()
	defer liveSocketDirs.Unlock()
	removed := 0
	for _, e := range entries {
		m := socketDirName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		dir := filepath.Join(runtime, e.Name())
		pid, _ := strconv.Atoi(m[1])
		if liveSocketDirs.dirs[dir] || (pid != os.Getpid() && api.ProcessAlive(pid)) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			log.Warn("remove stale plugin socket dir", "dir", dir, "error", err)
			continue
		}
		removed++
	}
	if removed > 0 {
		log.Info("removed plugin socket dirs left by a stopped daemon", "dir", runtime, "count", removed)
	}
}
