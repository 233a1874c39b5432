package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host"
	"github.com/agent-worker/agent-worker/host/api"
	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
)

// The daemon's test switches: variables that put a daemon in a state a
// test needs but a user must never get by accident (no sandbox, no
// cgroups, runs that hang). Only a binary built with the
// agentworker_testhooks tag reads them (testHooks): the end-to-end tests
// build theirs so (internal/testkit); make build, make dist and go install
// do not, so a release daemon ignores them whatever its environment holds.

// testNoLandlock names a test hook: set to a reason, the daemon takes the
// kernel to have no Landlock for that reason, as on macOS or an old
// kernel, so that --sandbox required can be tried where Landlock works.
const testNoLandlock = "AGENT_WORKER_TEST_NO_LANDLOCK"

// testNoCgroups names a test hook: set to a reason, the daemon makes no
// cgroups for plugin processes, as where cgroup v2 is not delegated, so
// that the subreaper fallback can be tried where cgroups work.
const testNoCgroups = "AGENT_WORKER_TEST_NO_CGROUPS"

// testPauseBeforeSettle names a test hook. Set to a file path, it makes
// the daemon write the id of each successful run to that file once the
// run's plugin has exited, and then wait, without settling the run, until
// the daemon stops: a test kills it there to check that a run is either
// settled whole or redone after a restart.
const testPauseBeforeSettle = "AGENT_WORKER_TEST_PAUSE_BEFORE_SETTLE"

// testDefaultListen names a test hook: set to host:port, it is the
// address a daemon given none takes instead of host.DefaultListen, so
// that a session can have "the default port" held while 5099 is busy on
// the machine.
const testDefaultListen = "AGENT_WORKER_TEST_DEFAULT_LISTEN"

// testParent names a test hook: set to the pid of the go test process
// that started the daemon (directly or through the CLI's auto-start), it
// makes the daemon stop as `stop` would once that process is gone. A test
// killed by its timeout, or a test binary that panicked or was killed,
// leaves no daemon running, and so no plugin process (each ends with its
// daemon). The tests set it in the environment of everything they start.
const testParent = "AGENT_WORKER_TEST_PARENT"

// testFailLoop names a test hook: set to the name of a vital loop
// ("scheduler", "workflow watcher", "plugin watcher", "cluster member
// loop"), that loop ends with an error as soon as it starts, so that a
// test sees what a user would when it stops (host.Config.FailLoop).
const testFailLoop = "AGENT_WORKER_TEST_FAIL_LOOP"

// parentPoll is how often the daemon looks for its test parent.
const parentPoll = time.Second

// testEnv is a test switch's value: empty in a binary built without the
// agentworker_testhooks tag, where the compiler drops what it guards.
func testEnv(name string) string {
	if !testHooks {
		return ""
	}
	return os.Getenv(name)
}

// applyTestHooks sets what the test switches in the environment ask for
// on cfg, each with a warning in the log.
func applyTestHooks(cfg *host.Config, log hclog.Logger) {
	if why := testEnv(testNoLandlock); why != "" {
		log.Warn("test hook set: the kernel is taken to have no Landlock", "env", testNoLandlock)
		cfg.SandboxStatus = &sb.Status{Why: why}
	}
	if why := testEnv(testNoCgroups); why != "" {
		log.Warn("test hook set: plugin processes get no cgroup", "env", testNoCgroups)
		cfg.NoCgroups = why
	}
	if addr := testEnv(testDefaultListen); addr != "" {
		log.Warn("test hook set: the default address is another", "env", testDefaultListen, "default", addr)
		cfg.DefaultAddr = addr
	}
	if loop := testEnv(testFailLoop); loop != "" {
		cfg.FailLoop = loop
	}
	if marker := testEnv(testPauseBeforeSettle); marker != "" {
		log.Warn("test hook set: every successful run pauses before it is settled", "env", testPauseBeforeSettle)
		cfg.Scheduler.BeforeSettle = pauseBeforeSettle(marker)
	}
}

// pauseBeforeSettle is the BeforeSettle hook of testPauseBeforeSettle. The
// marker is written through a rename, so a test never reads half an id.
func pauseBeforeSettle(marker string) func(context.Context, string) error {
	return func(ctx context.Context, runID string) error {
		tmp := marker + ".tmp"
		if err := os.WriteFile(tmp, []byte(runID), 0o600); err != nil {
			return fmt.Errorf("test hook: %w", err)
		}
		if err := os.Rename(tmp, marker); err != nil {
			return fmt.Errorf("test hook: %w", err)
		}
		<-ctx.Done()
		return ctx.Err()
	}
}

// endWithTestParent returns ctx, cancelled once the process testParent
// names has ended, when that switch is set: the daemon then stops cleanly
// as on SIGTERM. The watch ends with ctx or with the returned stop.
func endWithTestParent(ctx context.Context, log hclog.Logger) (context.Context, context.CancelFunc, error) {
	v := testEnv(testParent)
	if v == "" {
		return ctx, func() {}, nil
	}
	pid, err := strconv.Atoi(v)
	if err != nil || pid <= 0 {
		return ctx, nil, api.Errorf(api.CodeInvalid, "test hook %s=%q: not a process id", testParent, v)
	}
	log.Warn("test hook set: the daemon stops when the test process ends", "env", testParent, "pid", pid)
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		tick := time.NewTicker(parentPoll)
		defer tick.Stop()
		for api.ProcessAlive(pid) {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		log.Warn("the test process that started this daemon has ended: stopping", "pid", pid)
		cancel()
	}()
	return ctx, cancel, nil
}
