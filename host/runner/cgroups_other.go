//go:build !linux

package runner

import (
	"os/exec"
	"runtime"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

// Cgroups are a Linux feature (cgroups_linux.go). Elsewhere a run's
// plugin process keeps its process group only, which the run's end kills,
// and a plugin built on the sdk kills the process groups of its own
// children as it stops; Mechanism says so.
type Cgroups struct{}

// NewCgroups returns the cgroups of a system that has none.
func NewCgroups(string, hclog.Logger) *Cgroups { return &Cgroups{} }

// Mechanism says how the daemon makes sure nothing a run started outlives
// it, for status.
func (*Cgroups) Mechanism() api.ProcessControl {
	return api.ProcessControl{Mechanism: "process group", Detail: "no cgroups or child subreapers on " + runtime.GOOS +
		" (Linux only): each plugin process's group is killed when its run ends, and a plugin built on the sdk kills the groups of the processes it started as it stops; a process that starts a session of its own can outlive its run"}
}

// cgroup is never made here.
type cgroup struct{}

// enter makes no cgroup: there are none.
func (*Cgroups) enter(*exec.Cmd) *cgroup { return nil }

func (*cgroup) started() {}
func (*cgroup) kill()    {}

// Close has nothing to release.
func (*Cgroups) Close() {}

// join, limit and exceeded have no cgroup to act on: runs get no limits
// here, as LimitsInForce says.
func (*cgroup) join(int)                                {}
func (*Cgroups) limit(*cgroup, backend.RunLimits) error { return nil }
func (*cgroup) exceeded() string                        { return "" }

// LimitsInForce says that runs get no limits here.
func (*Cgroups) LimitsInForce(def backend.RunLimits) (string, []string) {
	return def.String() + " per run unless its agent sets limits:; none enforced: runs are limited only with cgroups (Linux)",
		[]string{"pids, memory, cpu (no cgroups on " + runtime.GOOS + ")"}
}

// Contain makes no cgroup: there are none. A check keeps its process
// group only.
func (*Cgroups) Contain(*exec.Cmd, backend.RunLimits) (started, kill func(), ok bool) {
	return func() {}, func() {}, false
}
