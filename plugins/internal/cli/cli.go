// Package cli runs the agent CLIs (claude, codex, cursor-agent) for the CLI
// backends: found on PATH or at a configured path, run in the agent's
// directory with stdin closed, stdout streamed line by line, stderr kept
// for the transcript, and the whole process tree killed on cancel, on an
// idle timeout, or when the plugin dies.
package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// killGrace is how long a CLI gets between SIGTERM and SIGKILL.
const killGrace = 2 * time.Second

// Find returns the CLI to run: configured (a path or a name) if set, else
// name on PATH. A missing CLI is a permanent error that says how to
// install it; retrying cannot help.
func Find(configured, name, install string) (string, error) {
	want := name
	if configured != "" {
		want = configured
	}
	path, err := exec.LookPath(want)
	if err != nil {
		return "", backend.Permanent(fmt.Errorf("%s CLI not found (%v): %s", name, err, install))
	}
	return path, nil
}

// Version runs `path --version` and returns its first line.
func Version(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line, nil
}

// Command is one CLI invocation.
type Command struct {
	Path string
	Args []string
	Dir  string
	Env  []string // the whole environment
	// IdleTimeout kills the CLI when it prints nothing for this long.
	IdleTimeout time.Duration
	// Stdout receives each line of stdout; an error stops the CLI.
	Stdout func(line []byte) error
	// Stderr receives each line of stderr.
	Stderr func(line string)
}

// ExitError is a CLI that exited unsuccessfully, with the end of its
// stderr, which usually says why.
type ExitError struct {
	Name   string
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%s exited with status %d", e.Name, e.Code)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// ErrIdle is returned when the CLI was killed for printing nothing.
var ErrIdle = errors.New("no output")

// Run runs c and waits for it. Cancelling ctx, the idle timeout or a
// Stdout error kill the CLI's whole process group (SIGTERM, then SIGKILL).
func Run(ctx context.Context, c Command) error {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	cmd.Stdin = nil // /dev/null
	cmd.SysProcAttr = childProcAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return backend.Permanent(fmt.Errorf("start %s: %w", c.Path, err))
	}
	pgid := cmd.Process.Pid

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var idle *time.Timer
	if c.IdleTimeout > 0 {
		idle = time.AfterFunc(c.IdleTimeout, func() { cancel(fmt.Errorf("%w for %s", ErrIdle, c.IdleTimeout)) })
		defer idle.Stop()
	}
	alive := func() {
		if idle != nil {
			idle.Reset(c.IdleTimeout)
		}
	}

	var tail tailBuffer
	var wg sync.WaitGroup
	wg.Go(func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			alive()
			tail.add(sc.Text())
			if c.Stderr != nil {
				c.Stderr(sc.Text())
			}
		}
	})
	wg.Go(func() {
		r := bufio.NewReaderSize(stdout, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				alive()
				if c.Stdout != nil {
					if err := c.Stdout(bytes.TrimRight(line, "\r\n")); err != nil {
						cancel(err)
					}
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					cancel(err)
				}
				return
			}
		}
	})

	// Kill the group when the run is cancelled; the pipes then close.
	stopped := make(chan struct{})
	go func() {
		select {
		case <-runCtx.Done():
			killGroup(pgid)
		case <-stopped:
		}
	}()
	wg.Wait()
	waitErr := cmd.Wait()
	close(stopped)
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // children the CLI left behind

	if cause := context.Cause(runCtx); runCtx.Err() != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s killed: %w", c.Path, cause)
	}
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		return &ExitError{Name: c.Path, Code: ee.ExitCode(), Stderr: tail.String()}
	}
	return waitErr
}

// killGroup sends SIGTERM to the group, then SIGKILL after killGrace.
func killGroup(pgid int) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return
	}
	deadline := time.Now().Add(killGrace)
	for time.Now().Before(deadline) {
		if syscall.Kill(-pgid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // waiting on another process's exit
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// Env returns the plugin's environment with overrides applied (KEY=value;
// a later value wins), for a CLI's private settings.
func Env(overrides ...string) []string {
	env := map[string]string{}
	var order []string
	for _, kv := range append(os.Environ(), overrides...) {
		k, v, _ := strings.Cut(kv, "=")
		if _, seen := env[k]; !seen {
			order = append(order, k)
		}
		env[k] = v
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+env[k])
	}
	return out
}

// tailBuffer keeps the last lines of stderr for error messages.
type tailBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (t *tailBuffer) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if strings.TrimSpace(line) == "" {
		return
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > 5 {
		t.lines = t.lines[1:]
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}

// Status says whether the CLI name is on PATH and which version it is, for
// `agent-worker backends`: "<name> <version> at <path>", or "missing: " and
// how to install it.
func Status(ctx context.Context, name, install string) string {
	path, err := exec.LookPath(name)
	if err != nil {
		return "missing: " + install
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	v, err := Version(ctx, path)
	if err != nil {
		return fmt.Sprintf("broken: %s --version: %v", path, err)
	}
	if !strings.HasPrefix(v, name) {
		v = name + " " + v
	}
	return v + " at " + path
}

// Pairs is a config's env as KEY=value pairs, sorted, for Env.
func Pairs(m map[string]string) []string {
	kv := make([]string, 0, len(m))
	for k, v := range m {
		kv = append(kv, k+"="+v)
	}
	slices.Sort(kv)
	return kv
}

// WorkDir is where a CLI runs: the agent's project directory, else the
// run's own directory.
func WorkDir(req backend.Request) string {
	if req.ProjectDir != "" {
		return req.ProjectDir
	}
	return req.WorkDir
}

// ConfigDir is a CLI's own config directory for a confined run, named by
// the variable key: the sandbox gives a run none of the user's (~/.claude,
// ~/.codex …), so the CLI keeps its settings and conversations in the
// agent's state directory (kept across runs, so a resumed conversation is
// found; the run's own directory where no state is kept), made 0700.
// It is "" when the run is not confined or the agent's env (its config's
// env, or the run's) names one.
func ConfigDir(req backend.Request, env map[string]string, key string) (string, error) {
	if req.Sandbox.IsZero() {
		return "", nil
	}
	if _, set := env[key]; set {
		return "", nil
	}
	if _, set := req.Env[key]; set {
		return "", nil
	}
	base := req.StateDir
	if base == "" {
		base = req.WorkDir
	}
	dir := filepath.Join(base, "config")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	return dir, nil
}

// Heartbeat sends a heartbeat event every period until the returned stop,
// which waits for the last send: a CLI that is alive but quiet (thinking,
// waiting on its model) keeps the daemon's idle timer from ending the
// run. A period of 0 sends none.
func Heartbeat(every time.Duration, send func(backend.Event)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	if every > 0 {
		wg.Go(func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					send(backend.Event{Kind: backend.EventHeartbeat})
				}
			}
		})
	}
	return func() { close(done); wg.Wait() }
}
