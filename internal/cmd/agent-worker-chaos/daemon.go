package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/catalog"
)

// daemon is one real `agent-worker daemon` of a scenario: its home and its
// port stay the same across kills, so that a restart is the same daemon
// as an operator's restart would be, and the senders find it where it was.
type daemon struct {
	name  string // "daemon 1", in what the harness prints
	cfg   config
	home  string
	port  int
	extra []string // scenario flags, e.g. --store postgres://…

	// mu guards the fields that follow: the process of the current life.
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been reaped
	info   api.DaemonInfo
}

// newDaemon prepares a daemon with a fresh home under the work directory
// and a free loopback port it keeps for every restart.
func newDaemon(cfg config, scenario, name string, extra ...string) (*daemon, error) {
	home := filepath.Join(cfg.work, scenario, strings.ReplaceAll(name, " ", ""))
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return &daemon{name: name, cfg: cfg, home: home, port: port, extra: extra}, nil
}

// logFile is where every life of the daemon writes its log, appended, so
// that a defect can be read back across kills.
func (d *daemon) logFile() string { return filepath.Join(d.home, "chaos-daemon.log") }

// start runs the daemon and waits until it answers /health.
func (d *daemon) start(ctx context.Context) error {
	args := append([]string{"daemon", "--home", d.home, "--listen", "127.0.0.1:" + strconv.Itoa(d.port),
		"--plugins-dir", d.cfg.plugins, "--log-level", "info",
		"--heartbeat-timeout", d.cfg.heartbeat.String()}, d.extra...)
	cmd := exec.Command(d.cfg.bin, args...)
	// The store is the scenario's to choose (--store in extra).
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AGENT_WORKER_") })
	cmd.Env = append(env, "AGENT_WORKER_HOME="+d.home)
	// Its own process group, so that ^C of make does not kill it before
	// the harness has read what it stored.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log, err := os.OpenFile(d.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close() // the child has its own descriptor
	fmt.Fprintf(log, "==== chaos: %s starts at %s\n", d.name, time.Now().Format(time.RFC3339Nano))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", d.name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	d.mu.Lock()
	d.cmd, d.exited = cmd, exited
	d.mu.Unlock()

	deadline := time.Now().Add(60 * time.Second)
	for {
		info, err := api.ReadDaemonInfo(d.home)
		if err == nil && info.PID == cmd.Process.Pid && info.Port != 0 {
			hc, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = api.NewClient(info).Health(hc)
			cancel()
			if err == nil {
				d.mu.Lock()
				d.info = info
				d.mu.Unlock()
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited at start (log: %s):\n%s", d.name, d.logFile(), tail(d.logFile(), 15))
		case <-time.After(50 * time.Millisecond):
		}
		if ctx.Err() != nil { // the scenario's close stops it
			return fmt.Errorf("start %s: %w", d.name, ctx.Err())
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return fmt.Errorf("%s did not answer /health within 60 s (log: %s)", d.name, d.logFile())
		}
	}
}

// client is an API client of the daemon's current life.
func (d *daemon) client() *api.Client {
	d.mu.Lock()
	defer d.mu.Unlock()
	return api.NewClient(d.info)
}

// endpoint is where to send and with which token. The token changes with
// every start, so a sender that failed asks again, as the CLI reads
// daemon.json at every invocation.
func (d *daemon) endpoint() (url, token string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.info.URL(), d.info.Token
}

// refresh rereads daemon.json when it names the running process, for a
// sender whose request failed (the daemon may have been restarted).
func (d *daemon) refresh() {
	info, err := api.ReadDaemonInfo(d.home)
	if err != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd != nil && info.PID == d.cmd.Process.Pid && info.Port != 0 {
		d.info = info
	}
}

// kill is the crash: SIGKILL to the daemon's process alone (its plugin
// processes are told by the kernel, as they would be by a real crash), and
// waits until it is reaped.
func (d *daemon) kill() error {
	d.mu.Lock()
	cmd, exited := d.cmd, d.exited
	d.mu.Unlock()
	if cmd == nil {
		return errors.New(d.name + " is not running")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 %s: %w", d.name, err)
	}
	<-exited
	return nil
}

// stop shuts the daemon down the ordinary way; one that does not exit
// within 20 s is killed with its process group.
func (d *daemon) stop(ctx context.Context) {
	d.mu.Lock()
	cmd, exited := d.cmd, d.exited
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	// Even after ^C: the daemon is in a process group of its own.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	if err := d.client().Shutdown(sctx); err != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM) // not serving yet: it stops on SIGTERM too
	}
	cancel()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		step("%s did not stop within 20 s: killed", d.name)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// leftovers finds the processes still executing one of the daemons'
// verified plugin copies once every daemon of the scenario has stopped: a
// plugin process that outlived the daemon that started it. It gives them
// a few seconds to go, then kills those left, by pid, so that one scenario
// leaves nothing behind for the next, and returns how many it killed.
func leftovers(daemons []*daemon) int {
	dirs := make([]string, len(daemons))
	for i, d := range daemons {
		dirs[i] = catalog.VerifiedDir(d.home) + string(filepath.Separator)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		pids := pluginPIDs(dirs)
		if len(pids) == 0 {
			return 0
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return len(pids)
		}
		time.Sleep(100 * time.Millisecond) // other processes' exits: nothing to wait on
	}
}

// pluginPIDs lists the processes whose executable lies in one of dirs.
func pluginPIDs(dirs []string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		exe, err := os.Readlink(filepath.Join(p, "exe"))
		if err != nil || !slices.ContainsFunc(dirs, func(dir string) bool { return strings.HasPrefix(exe, dir) }) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// inFlight is how many runs the daemon supervises now (-1 if it does not
// say), printed beside a kill to show that it cut runs short.
func (d *daemon) inFlight(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	h, err := d.client().Health(ctx)
	if err != nil {
		return -1
	}
	return len(h.Workers)
}

// freePort is a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail is the last n lines of a file, for an error that points at a log.
func tail(file string, n int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
