package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// A run's limits (its agent's limits:, over the daemon's --run-limits) are
// written to its plugin process's cgroup as the run starts, so a warm
// spare takes the limits of the run that takes it: pids.max, memory.max
// (swap off, so the limit is what the run has) and cpu.max. The
// controllers are enabled for the daemon's cgroups where the kernel lets
// the daemon: in cgroup v2, in the subtree_control of the daemon's own
// cgroup and of its agent-worker-<pid>-<n>. A hybrid system binds
// controllers to cgroup v1 hierarchies instead, where the v2 one has none:
// there pids and cpu are taken from their v1 hierarchy (a cgroup per plugin
// process beside the v2 one, which the process joins as it starts, before
// its run can start anything); v1's memory controller, which the kernel
// deprecates, is not used. After the run, pids.events and memory.events
// say whether it hit a limit: the run then fails with the reason.

// limitControllers are the controllers of a run's limits.
var limitControllers = []string{"pids", "memory", "cpu"}

// limitSetup is what the daemon's cgroups can enforce.
type limitSetup struct {
	v2  []string          // controllers enabled for the plugin processes' cgroups (v2)
	v1  map[string]string // controller → the daemon's cgroup in its v1 hierarchy
	why map[string]string // controller → why runs get no limit of it
}

// groupLimits is a plugin process's side of its limits.
type groupLimits struct {
	v1  map[string]string // controller → the process's v1 cgroup
	set backend.RunLimits // the limits written for its run
}

// setupLimits enables the limit controllers for the cgroups below c.root,
// or finds them in v1 hierarchies; what cannot be had is said in why.
func (c *Cgroups) setupLimits(parent string) {
	c.lim.why = map[string]string{}
	mount, _ := cgroup2Mount()
	inV2 := readWords(filepath.Join(mount, "cgroup.controllers"))
	for _, ctl := range limitControllers {
		if !slices.Contains(inV2, ctl) {
			c.setupV1(ctl)
			continue
		}
		if err := enableController(parent, c.root, ctl); err != nil {
			c.lim.why[ctl] = err.Error()
			continue
		}
		c.lim.v2 = append(c.lim.v2, ctl)
	}
	if len(c.lim.why) > 0 {
		c.log.Warn("some run limits cannot be enforced", "why", c.lim.why)
	}
}

// enableController enables ctl for the cgroups below root, and so first
// for root in its parent.
func enableController(parent, root, ctl string) error {
	if !slices.Contains(readWords(filepath.Join(parent, "cgroup.controllers")), ctl) {
		return fmt.Errorf("the %s controller is not delegated to the daemon's cgroup %s", ctl, parent)
	}
	if !slices.Contains(readWords(filepath.Join(root, "cgroup.controllers")), ctl) {
		err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+ctl), 0)
		if errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("enable %s in %s: it holds processes, and cgroup v2 enables %s only for the cgroups of one that holds none (start the daemon in a cgroup of its own, below the one delegated to it): %w", ctl, parent, ctl, err)
		}
		if err != nil {
			return fmt.Errorf("enable %s in %s: %w", ctl, parent, err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+"+ctl), 0); err != nil {
		return fmt.Errorf("enable %s in %s: %w", ctl, root, err)
	}
	return nil
}

// setupV1 makes the daemon's cgroup in the v1 hierarchy of ctl, where the
// v2 hierarchy lacks it (a hybrid system).
func (c *Cgroups) setupV1(ctl string) {
	if ctl == "memory" {
		c.lim.why[ctl] = "the memory controller is bound to a cgroup v1 hierarchy, whose memory controller the daemon does not use (the kernel deprecates it): memory limits need cgroup v2 (unified hierarchy)"
		return
	}
	parent, err := ownV1Cgroup(ctl)
	if err == nil {
		c.sweep(parent) // what gone daemons left there
		dir := filepath.Join(parent, filepath.Base(c.root))
		if err = os.Mkdir(dir, 0o755); err == nil {
			if c.lim.v1 == nil {
				c.lim.v1 = map[string]string{}
			}
			c.lim.v1[ctl] = dir
			return
		}
	}
	c.lim.why[ctl] = fmt.Sprintf("the %s controller is not in the cgroup v2 hierarchy, and its v1 hierarchy cannot be used: %v", ctl, err)
}

// ownV1Cgroup is the directory of this process's cgroup in the v1
// hierarchy of ctl, if the daemon may make cgroups in it.
func ownV1Cgroup(ctl string) (string, error) {
	mount, err := cgroup1Mount(ctl)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), ctl) {
			dir := filepath.Join(mount, parts[2])
			if err := syscall.Access(dir, 0o2 /* W_OK */); err != nil {
				return "", fmt.Errorf("the daemon may not make cgroups in %s: %w", dir, err)
			}
			return dir, nil
		}
	}
	return "", fmt.Errorf("the daemon is in no %s cgroup", ctl)
}

// cgroup1Mount finds where the v1 hierarchy of ctl is mounted.
func cgroup1Mount(ctl string) (string, error) {
	dir, err := mountOf(func(fstype, opts string) bool {
		return fstype == "cgroup" && slices.Contains(strings.Split(opts, ","), ctl)
	})
	if err == nil && dir == "" {
		err = fmt.Errorf("no cgroup hierarchy has the %s controller", ctl)
	}
	return dir, err
}

// enterV1 makes the process's cgroups in the v1 hierarchies the daemon
// uses; join puts the process in them.
func (c *Cgroups) enterV1(g *cgroup) {
	for ctl, parent := range c.lim.v1 {
		dir := filepath.Join(parent, filepath.Base(g.dir))
		if err := os.Mkdir(dir, 0o755); err != nil {
			c.log.Warn("make a plugin process's v1 cgroup; its runs get no "+ctl+" limit", "error", err)
			continue
		}
		if g.lim.v1 == nil {
			g.lim.v1 = map[string]string{}
		}
		g.lim.v1[ctl] = dir
	}
}

// join puts the started process (all its threads) in its v1 cgroups. It
// has started nothing yet: a plugin starts processes only for a run.
func (g *cgroup) join(pid int) {
	if g == nil {
		return
	}
	for ctl, dir := range g.lim.v1 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			g.log.Warn("put a plugin process in its v1 cgroup; its runs get no "+ctl+" limit", "error", err)
			delete(g.lim.v1, ctl)
		}
	}
}

// limit writes a run's limits to its process's cgroup (an unset one is
// written as no limit, so the files say what is in force).
func (c *Cgroups) limit(g *cgroup, l backend.RunLimits) error {
	if c == nil || g == nil {
		return nil
	}
	v2 := c.lim.v2
	g.lim.set = l
	var errs []error
	write := func(dir, file, value string) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
			errs = append(errs, fmt.Errorf("write %s: %w", file, err))
		}
	}
	pids, memory, quota := "max", "max", "-1"
	if l.Pids > 0 {
		pids = strconv.FormatInt(l.Pids, 10)
	}
	if l.Memory > 0 {
		memory = strconv.FormatInt(l.Memory, 10)
	}
	if l.CPU > 0 {
		quota = strings.Fields(backend.CPUMax(l.CPU))[0]
	}
	for _, ctl := range v2 {
		switch ctl {
		case "pids":
			write(g.dir, "pids.max", pids)
		case "memory":
			write(g.dir, "memory.max", memory)
			if l.Memory > 0 {
				// Past its memory a run is killed, not swapped out.
				_ = os.WriteFile(filepath.Join(g.dir, "memory.swap.max"), []byte("0"), 0)
			}
		case "cpu":
			write(g.dir, "cpu.max", backend.CPUMax(l.CPU))
		}
	}
	if dir, ok := g.lim.v1["pids"]; ok {
		write(dir, "pids.max", pids)
	}
	if dir, ok := g.lim.v1["cpu"]; ok {
		write(dir, "cpu.cfs_period_us", "100000")
		write(dir, "cpu.cfs_quota_us", quota)
	}
	return errors.Join(errs...)
}

// exceeded says which limit the run hit, from its cgroup's events: a fork
// or thread refused at pids.max, a process killed at memory.max; "" when
// none was. (A run at its cpu.max is slowed down, not failed.)
func (g *cgroup) exceeded() string {
	if g == nil {
		return ""
	}
	var out []string
	pidsDir := g.dir
	if dir, ok := g.lim.v1["pids"]; ok {
		pidsDir = dir
	}
	if n := eventCount(filepath.Join(pidsDir, "pids.events"), "max"); n > 0 && g.lim.set.Pids > 0 {
		out = append(out, fmt.Sprintf("the run hit its process limit (pids %d: %d forks or new threads refused); raise it with limits: {pids: N} on the agent, or the daemon's --run-limits", g.lim.set.Pids, n))
	}
	if n := eventCount(filepath.Join(g.dir, "memory.events"), "oom_kill"); n > 0 && g.lim.set.Memory > 0 {
		out = append(out, fmt.Sprintf("the run hit its memory limit (memory %s: %d processes killed out of memory); raise it with limits: {memory: SIZE} on the agent, or the daemon's --run-limits", backend.FormatMemory(g.lim.set.Memory), n))
	}
	return strings.Join(out, "; ")
}

// removeV1 removes the process's v1 cgroups, once its v2 one is killed
// (the same processes: they are gone).
func (g *cgroup) removeV1() {
	for _, dir := range g.lim.v1 {
		killCgroup(dir, g.log)
	}
}

// closeV1 kills and removes the daemon's v1 cgroups, as it stops.
func (c *Cgroups) closeV1() {
	for _, dir := range c.lim.v1 {
		killTree(dir, c.log)
	}
}

// LimitsInForce says, for status, a run's limits by default and which
// of them the daemon enforces; unenforced names each it cannot, with why.
func (c *Cgroups) LimitsInForce(def backend.RunLimits) (limits string, unenforced []string) {
	limits = def.String() + " per run unless its agent sets limits:"
	if c == nil || c.root == "" {
		return limits + "; none enforced: without a cgroup of its own a run's processes, memory and CPU are not limited",
			[]string{"pids, memory, cpu (no cgroup per run)"}
	}
	var on []string
	for _, ctl := range limitControllers {
		if why, ok := c.lim.why[ctl]; ok {
			unenforced = append(unenforced, ctl+" ("+why+")")
			continue
		}
		v := "v2"
		if _, ok := c.lim.v1[ctl]; ok {
			v = "v1"
		}
		on = append(on, ctl+" (cgroup "+v+")")
	}
	if len(on) > 0 {
		limits += "; enforced: " + strings.Join(on, ", ")
	}
	if len(unenforced) > 0 {
		limits += "; not enforced: " + strings.Join(unenforced, "; ")
	}
	return limits, unenforced
}

// readWords reads a cgroup file of space-separated words.
func readWords(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// eventCount reads the count of key in a cgroup events file ("max 3").
func eventCount(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && k == key {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
