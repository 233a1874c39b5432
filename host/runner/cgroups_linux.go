package runner

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

// A process group does not hold everything a run starts: a child that
// calls setsid() leaves it, and outlived its run and the daemon. So every
// backend plugin process starts in a cgroup (v2) of its own, which no
// descendant can leave (its confined run cannot write to /sys), and the
// run's end kills the whole cgroup (cgroup.kill). The cgroups live under
// one per daemon, agent-worker-<pid>-<n>, beside the daemon in its own
// cgroup (n tells apart the daemons of one process, as in tests);
// a daemon that starts removes those of daemons that are gone, killing
// what they left. Where no cgroup can be made (no cgroup v2, no write
// access), each plugin process built on the sdk is made a child subreaper
// instead (backend.EnvSubreaper): what leaves its process group is
// reparented to it, and it kills and reaps all of it as it stops; status
// says which mechanism is in force.

// cgroupDirName matches a daemon's cgroup; the pid tells a live daemon's.
var cgroupDirName = regexp.MustCompile(`^agent-worker-([0-9]+)-[0-9]+$`)

// cgroupsMade numbers the daemons' cgroups of this process.
var cgroupsMade atomic.Int64

// Cgroups makes and kills the plugin processes' cgroups of one daemon.
type Cgroups struct {
	root string // the daemon's cgroup directory; "" when unavailable
	why  string // why cgroups are not used
	n    atomic.Int64
	log  hclog.Logger
	lim  limitSetup // the controllers of runs' limits (limits_linux.go)
}

// NewCgroups finds the cgroup v2 hierarchy and the daemon's place in it,
// removes the cgroups of daemons that are gone (killing what is left in
// them), and makes this daemon's. It never fails: without cgroups, runs
// keep their process group only, as Mechanism says.
func NewCgroups(disabled string, log hclog.Logger) *Cgroups {
	c := &Cgroups{log: log}
	parent, err := ownCgroup()
	if disabled != "" {
		err = errors.New(disabled)
	}
	if err == nil {
		c.sweep(parent)
		c.root = filepath.Join(parent, fmt.Sprintf("agent-worker-%d-%d", os.Getpid(), cgroupsMade.Add(1)))
		err = os.Mkdir(c.root, 0o755)
		if err == nil {
			c.setupLimits(parent)
		}
	}
	if err != nil {
		c.root, c.why = "", err.Error()
		log.Warn("plugin processes get no cgroup of their own: a process a run starts in a session of its own can outlive the run", "why", c.why)
	}
	return c
}

// Mechanism says how the daemon makes sure nothing a run started outlives
// it, for status.
func (c *Cgroups) Mechanism() api.ProcessControl {
	if c == nil || c.root == "" {
		why := "not set up"
		if c != nil {
			why = c.why
		}
		return api.ProcessControl{Mechanism: "subreaper", Detail: "no cgroup v2 here (" + why + "): each plugin process built on the sdk is a child subreaper that kills and reaps everything its run started when it stops; a process that leaves the session of another plugin can outlive its run"}
	}
	return api.ProcessControl{Mechanism: "cgroup v2", Detail: "each plugin process in a cgroup of its own under " + c.root + ", killed whole when its run ends"}
}

// cgroup is one plugin process's group.
type cgroup struct {
	dir string
	fd  *os.File // open until the process has started in it
	log hclog.Logger
	lim groupLimits // its run's limits (limits_linux.go)
}

// enter makes a new cgroup for the process cmd will start and has cmd
// start in it (clone3 into the cgroup: the process never runs outside).
// nil when the daemon has no cgroups.
func (c *Cgroups) enter(cmd *exec.Cmd) *cgroup {
	if c == nil || c.root == "" {
		return nil
	}
	dir := filepath.Join(c.root, "p"+strconv.FormatInt(c.n.Add(1), 10))
	if err := os.Mkdir(dir, 0o755); err != nil {
		c.log.Warn("make a plugin process's cgroup; it starts in the daemon's", "error", err)
		return nil
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		c.log.Warn("open a plugin process's cgroup; it starts in the daemon's", "error", err)
		return nil
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(fd.Fd())
	g := &cgroup{dir: dir, fd: fd, log: c.log}
	c.enterV1(g)
	return g
}

// started closes the daemon's handle on the group once the process is in
// it (or failed to start).
func (g *cgroup) started() {
	if g != nil && g.fd != nil {
		g.fd.Close()
		g.fd = nil
	}
}

// kill ends every process in the group, wherever it went, and removes the
// group once it is empty.
func (g *cgroup) kill() {
	if g == nil {
		return
	}
	g.started()
	killCgroup(g.dir, g.log)
	g.removeV1()
}

// killCgroup kills everything in dir and removes it, waiting (briefly) for
// the kernel to reap the processes.
func killCgroup(dir string, log hclog.Logger) {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		killProcs(dir) // a kernel before 5.14 has no cgroup.kill
	}
	deadline := time.Now().Add(killGrace)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			log.Warn("a plugin process's cgroup is not empty after its kill", "cgroup", dir, "error", err)
			return
		}
		killProcs(dir)
		time.Sleep(5 * time.Millisecond) // the kernel empties the group as it reaps: no event to wait on here
	}
}

// killProcs sends SIGKILL to every process listed in dir's cgroup.procs.
func killProcs(dir string) {
	f, err := os.Open(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// Close kills every plugin process's group of this daemon and removes its
// cgroup, as the daemon stops.
func (c *Cgroups) Close() {
	if c == nil || c.root == "" {
		return
	}
	killTree(c.root, c.log)
	c.closeV1()
}

// killTree kills everything in dir and in the cgroups below it, and
// removes them, deepest first; it returns how many cgroups below dir it
// found.
func killTree(dir string, log hclog.Logger) int {
	n := 0
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			n += 1 + killTree(filepath.Join(dir, e.Name()), log)
		}
	}
	killCgroup(dir, log)
	return n
}

// OwnCgroup is the cgroup v2 directory of this process, where a daemon it
// starts makes its cgroups, if cgroups may be made in it; and
// KillCgroupTree ends and removes a cgroup with everything below it. A
// test keeps its daemons apart from other tests' with them (every daemon
// sweeps what gone daemons of its own cgroup left).
func OwnCgroup() (string, error) { return ownCgroup() }

// KillCgroupTree: see OwnCgroup.
func KillCgroupTree(dir string) { killTree(dir, hclog.NewNullLogger()) }

// sweep kills and removes the cgroups of daemons that are gone.
func (c *Cgroups) sweep(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		m := cgroupDirName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || api.ProcessAlive(pid) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		if groups := killTree(dir, c.log); groups > 0 {
			c.log.Warn("killed what a stopped daemon's runs left running", "cgroup", dir, "groups", groups)
		}
	}
}

// ownCgroup is the directory of this process's cgroup in the cgroup v2
// hierarchy (mounted at /sys/fs/cgroup, or beside v1 controllers at
// /sys/fs/cgroup/unified), if the daemon may make cgroups in it.
func ownCgroup() (string, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if rel, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			dir := filepath.Join(mount, rel)
			if err := syscall.Access(dir, 0o2 /* W_OK */); err != nil {
				return "", fmt.Errorf("the daemon may not make cgroups in %s: %w", dir, err)
			}
			return dir, nil
		}
	}
	return "", errors.New("the daemon is in no cgroup v2 (no 0:: line in /proc/self/cgroup)")
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted.
func cgroup2Mount() (string, error) {
	dir, err := mountOf(func(fstype, _ string) bool { return fstype == "cgroup2" })
	if err == nil && dir == "" {
		err = errors.New("no cgroup v2 hierarchy is mounted")
	}
	return dir, err
}

// mountOf is the mount point of the first mount in /proc/self/mountinfo
// whose file system type and super-block options match; "" when none
// does.
func mountOf(match func(fstype, superOpts string) bool) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mount-point options [optional...] - fstype source super-options
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if i := slices.Index(fields, "-"); i > 0 && i+3 < len(fields) && match(fields[i+1], fields[i+3]) {
			return fields[4], nil
		}
	}
	return "", sc.Err()
}

// Contain has the process cmd will start (a merge queue check) start in a
// cgroup of its own under the daemon's, as a run's plugin process does:
// nothing it starts can leave it, its kill ends all of it, and the
// daemon's Close, or the sweep of the next daemon after a crash, ends it
// with the runs'. started closes the daemon's handle once cmd.Start has
// returned; kill ends everything in the cgroup and removes it. ok is
// false (the funcs do nothing) where the daemon has no cgroups. The
// cgroup holds the check to l, as a run's holds the run (a check runs the
// agents' code too): a fork bomb in a branch stops at its pids.
func (c *Cgroups) Contain(cmd *exec.Cmd, l backend.RunLimits) (started, kill func(), ok bool) {
	g := c.enter(cmd)
	if g == nil {
		return func() {}, func() {}, false
	}
	if err := c.limit(g, l); err != nil {
		c.log.Warn("write a merge queue check's limits to its cgroup", "limits", l.String(), "error", err)
	}
	started = func() {
		g.started()
		if cmd.Process != nil {
			g.join(cmd.Process.Pid) // v1 cgroups (limits_linux.go)
		}
	}
	return started, g.kill, true
}
