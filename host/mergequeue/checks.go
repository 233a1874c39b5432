package mergequeue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/store"
)

// Confine decides the sandbox of a check run in dir with the private
// temporary directory tmp; ok is false when checks run unconfined (the
// daemon's --sandbox, or a kernel without Landlock). host/sandbox
// provides it.
type Confine func(dir, tmp string) (p sb.Policy, ok bool)

// Contain has the process cmd will start start in a cgroup of its own,
// which nothing it starts can leave: started is called once cmd.Start has
// returned, kill ends all that is in the cgroup. ok is false where there
// are no cgroups (the funcs then do nothing). host/runner provides it.
type Contain func(cmd *exec.Cmd) (started, kill func(), ok bool)

// checkGuard is the shell a check command runs under (as its $0): it
// leads the check's process group, runs the command as its child and
// exits with its status; when the daemon dies, its parent-death signal
// (SIGTERM, checkProcAttr) has it kill the whole group, so the check and
// what it started in its group end with the daemon, not only the shell.
// What left the group goes with the check's cgroup, or endLeftovers.
const checkGuard = `trap 'trap - TERM; kill -KILL 0' TERM; sh -c "$0" & wait $!`

// checkMarker names the variable every check's environment carries, set
// to its scratch worktree, by which endLeftovers finds what a check left
// running when its daemon died.
const checkMarker = "AGENT_WORKER_CHECK"

// checkRun is how the checks of one chain went: passed, or the command
// that failed.
type checkRun struct {
	passed bool
	failed store.QueueCheck
}

// scratchDir is where a workflow's merge queue checks out what it checks:
// beside its agents' worktrees, under a name no agent can have.
func (s *Service) scratchDir(wf store.Workflow) string {
	dir := filepath.Join(s.wt.Root(), wf.Name, wf.Tag, ".merge-queue")
	if wf.Within != "" {
		dir += "@" + wf.Within // one repository's queue beside another's
	}
	return dir
}

// check runs checks, in order, on the chain's last commit checked out in
// a scratch worktree, within timeout for all of them, and records each
// run for every entry of the chain. It stops at the first that fails. An
// error is the daemon's trouble (git, the disk), not the checks'.
func (s *Service) check(ctx context.Context, wf store.Workflow, chain []link, checks []string, timeout time.Duration) (checkRun, error) {
	if len(checks) == 0 {
		return checkRun{passed: true}, nil
	}
	tip := chain[len(chain)-1].commit
	batch := ids(entries(chain))
	dir := s.scratchDir(wf)
	repo := wf.WorkspaceRepo
	// No two checks ever run in the same scratch worktree: what one left
	// running (its daemon killed) goes before the next begins.
	if n := endLeftovers(dir); n > 0 {
		s.log.Warn("merge queue: killed what an earlier check left running", "dir", dir, "processes", n)
	}
	if err := s.scratch(ctx, repo, dir, tip); err != nil {
		return checkRun{}, fmt.Errorf("check out %s for the checks: %w", short(tip), err)
	}
	defer func() {
		lctx, unlock := s.lock(ctx, repo)
		defer unlock()
		if err := s.remove(lctx, repo, dir, true); err != nil {
			s.log.Warn("merge queue: remove the scratch worktree", "dir", dir, "error", err)
		}
	}()
	tmp, err := os.MkdirTemp("", "aw-check-")
	if err != nil {
		return checkRun{}, err
	}
	defer os.RemoveAll(tmp)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, c := range checks {
		start := time.Now()
		code, out, err := s.runCheck(cctx, dir, tmp, c)
		if ctx.Err() != nil {
			return checkRun{}, ctx.Err() // the daemon is stopping: check again after
		}
		rec := store.QueueCheck{Batch: batch, Command: c, ExitCode: code, DurationMS: time.Since(start).Milliseconds(), Output: out, At: start}
		if err != nil {
			rec.Output += "\nagent-worker: " + err.Error()
			if code == 0 {
				rec.ExitCode = -1
			}
		}
		rec.TimedOut = errors.Is(cctx.Err(), context.DeadlineExceeded)
		if rec.TimedOut {
			rec.Output += fmt.Sprintf("\nagent-worker: the checks ran out of their time (check_timeout %s) and were killed", timeout)
		}
		if err := s.db.AddQueueCheck(ctx, rec); err != nil {
			return checkRun{}, err
		}
		ok := rec.ExitCode == 0 && !rec.TimedOut
		if s.observer != nil {
			s.observer.CheckRan(wf.Name, time.Since(start), ok)
		}
		s.log.Info("merge queue: check ran", "workflow", wf.Name+":"+wf.Tag, "batch", strings.Join(batch, ","), "command", c, "exit", rec.ExitCode, "ms", rec.DurationMS)
		if !ok {
			return checkRun{failed: rec}, nil
		}
	}
	return checkRun{passed: true}, nil
}

// scratch makes dir a detached worktree of repo at commit, replacing
// whatever an earlier check (or a daemon that died) left there.
func (s *Service) scratch(ctx context.Context, repo, dir, commit string) error {
	lctx, unlock := s.lock(ctx, repo)
	defer unlock()
	if ok, err := s.isWorktree(lctx, repo, dir); err != nil {
		return err
	} else if ok {
		if err := s.remove(lctx, repo, dir, true); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if _, err := git(lctx, repo, "worktree", "prune"); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	_, err := git(lctx, repo, "worktree", "add", "--detach", "--quiet", dir, commit)
	return err
}

// runCheck runs one check command with sh -c in dir, in a process group
// of its own (killed whole when ctx ends) and, where the daemon has
// cgroups, a cgroup of its own (killed whole as the check ends: nothing
// it started outlives it), with the environment checkEnv gives it,
// confined like a run where the sandbox is on. It returns the exit status
// and the output's tail.
func (s *Service) runCheck(ctx context.Context, dir, tmp, command string) (int, string, error) {
	cmd := exec.Command("sh", "-c", checkGuard, command)
	cmd.Dir = dir
	cmd.Env = append(checkEnv(tmp), checkMarker+"="+dir)
	cmd.SysProcAttr = checkProcAttr()
	started, kill, contained := func() {}, func() {}, false
	if s.contain != nil {
		started, kill, contained = s.contain(cmd)
	}
	defer kill()
	if !contained {
		defer endLeftovers(dir) // what left the process group, found by its marker
	}
	out := &tailBuffer{max: store.MaxQueueOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second // a grandchild holding the output open
	var release func()
	start := func() (err error) {
		release, err = startOnThread(cmd.Start)
		return err
	}
	if s.confine != nil {
		if p, ok := s.confine(dir, tmp); ok {
			// Confined, a check cannot write the user's build cache;
			// Go's goes in its TMPDIR instead (the last value wins).
			cmd.Env = append(cmd.Env, "GOCACHE="+filepath.Join(tmp, "go-build"))
			start = func() (err error) {
				release, err = sb.StartConfined(p, cmd.Start)
				return err
			}
		}
	}
	err := start()
	started()
	if err != nil {
		return -1, "", fmt.Errorf("start the check: %w", err)
	}
	if release != nil {
		defer release()
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			kill() // what left the process group
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code := exit.ExitCode()
		if code < 0 {
			code = 128 + int(syscall.SIGKILL)
		}
		return code, out.String(), nil
	case err != nil:
		return -1, out.String(), err
	}
	return 0, out.String(), nil
}

// startOnThread calls start on an OS thread of its own, kept until
// release, as sb.StartConfined does: a child's parent-death signal
// follows the thread that started it (golang/go#27505), and a thread the
// runtime ends (one a locked goroutine left) would otherwise kill a
// check that is still running.
func startOnThread(start func() error) (release func(), err error) {
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after the check
		errc <- start()
		<-done
	}()
	if err := <-errc; err != nil {
		close(done)
		return nil, err
	}
	return sync.OnceFunc(func() { close(done) }), nil
}

// checkEnvNames are the daemon's variables a check inherits: what running
// programs needs (PATH, HOME, user, locale, time zone), proxies and CA
// bundles, and the build tools' own caches and settings. Nothing else —
// API keys, the daemon's own settings — reaches code from an agent's
// branch.
var checkEnvNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "LANG": true, "LANGUAGE": true, "TZ": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "XDG_CACHE_HOME": true, "XDG_CONFIG_HOME": true,
	"GOPATH": true, "GOCACHE": true, "GOMODCACHE": true, "GOFLAGS": true, "GOPROXY": true, "GOTOOLCHAIN": true, "GORACE": true,
	"CARGO_HOME": true, "npm_config_cache": true,
}

// checkEnv is a check's environment: checkEnvNames and LC_* of the
// daemon's, TMPDIR the check's own.
func checkEnv(tmp string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if checkEnvNames[k] || strings.HasPrefix(k, "LC_") || strings.HasSuffix(k, "_PROXY") || strings.HasSuffix(k, "_proxy") {
			env = append(env, kv)
		}
	}
	return append(env, "TMPDIR="+tmp, "CI=true")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	// mu guards the fields that follow: stdout and stderr write at once.
	mu  sync.Mutex
	max int
	b   []byte
	cut bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > t.max {
		b, t.cut = b[len(b)-t.max:], true
	}
	if t.cut {
		return "[…]\n" + string(b)
	}
	return string(b)
}
