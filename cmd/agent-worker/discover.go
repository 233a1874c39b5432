package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// startWait bounds how long a command waits for a daemon it started (or
// that another command started at the same time): a fresh home's
// migrations and plugin checks take a few seconds on a loaded machine.
const startWait = 15 * time.Second

// errNotRunning is returned by connect(start=false) when no daemon runs.
var errNotRunning = api.Errorf(api.CodeUnreachable, "no daemon running: start one with `agent-worker daemon`")

// connect finds the daemon of home through daemon.json. A file whose pid is
// dead was left by a killed daemon and counts as absent. With start, a
// missing daemon is started in the background and awaited.
//
// AGENT_WORKER_URL (with AGENT_WORKER_TOKEN) names a daemon directly
// instead: any member of a cluster, or a daemon on another machine. It is
// never started from here. Over https, AGENT_WORKER_TLS_FINGERPRINT pins
// its certificate (a daemon with --tls auto has no other proof).
func (e *env) connect(ctx context.Context, start bool) (*api.Client, error) {
	if raw := os.Getenv("AGENT_WORKER_URL"); raw != "" {
		d, err := remoteDaemon(raw, os.Getenv("AGENT_WORKER_TOKEN"), os.Getenv("AGENT_WORKER_TLS_FINGERPRINT"))
		if err != nil {
			return nil, err
		}
		return e.client(d), nil
	}
	d, err := api.ReadDaemonInfo(e.home)
	if err == nil && api.ProcessAlive(d.PID) {
		return e.client(d), nil
	}
	if err != nil && !errors.Is(err, api.ErrNoDaemon) {
		fmt.Fprintf(e.stderr, "agent-worker: %v; starting a new daemon\n", err)
	}
	if !start {
		return nil, errNotRunning
	}
	if d, err = e.startDaemon(ctx); err != nil {
		return nil, err
	}
	return e.client(d), nil
}

// client talks to d, waiting --request-timeout for each answer.
func (e *env) client(d api.DaemonInfo) *api.Client {
	c := api.NewClient(d)
	if e.timeout > 0 {
		c.HTTP.Timeout = e.timeout
	}
	return c
}

// startDaemon runs `agent-worker daemon` detached from this terminal (own
// session, output to the home's log file) and waits until it has published
// daemon.json. If another command started a daemon at the same time, the
// winner's file is just as good.
//
// The daemon gets no --listen: it inherits this command's environment, so
// an address the user chose reaches it as AGENT_WORKER_LISTEN (or the
// listen of AGENT_WORKER_CONFIG's file) and is kept or refused; without
// one it takes the default port, or a free one when that is in use, and
// we find it through daemon.json either way. autoStartedEnv tells it
// that its advice must name the variable, not the daemon's flag.
func (e *env) startDaemon(ctx context.Context) (api.DaemonInfo, error) {
	exe, err := os.Executable()
	if err != nil {
		return api.DaemonInfo{}, fmt.Errorf("start daemon: %w", err)
	}
	logDir := filepath.Join(e.home, api.LogDir)
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return api.DaemonInfo{}, fmt.Errorf("start daemon: %w", err)
	}
	logPath := filepath.Join(logDir, "daemon.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return api.DaemonInfo{}, fmt.Errorf("start daemon: %w", err)
	}
	defer logFile.Close()
	start, _ := logFile.Seek(0, 2)

	cmd := exec.Command(exe, "daemon", "--home", e.home)
	cmd.Env = append(os.Environ(), autoStartedEnv+"=1")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return api.DaemonInfo{}, fmt.Errorf("start daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func(exited chan<- error) { exited <- cmd.Wait() }(exited) // reaps the child if it dies while we wait

	deadline := time.NewTimer(startWait)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		if d, err := api.ReadDaemonInfo(e.home); err == nil && api.ProcessAlive(d.PID) {
			return d, nil
		}
		select {
		case <-tick.C:
		case err := <-exited:
			if api.ProcessAlive(api.LockHolder(e.home)) {
				// Lost a start race to another command's daemon, which
				// holds the home's lock from its first step and publishes
				// its file once ready: wait for it as for our own.
				exited = nil
				continue
			}
			if d, ok := e.awaitDaemonFile(ctx, time.Second); ok {
				return d, nil
			}
			return api.DaemonInfo{}, api.Errorf(api.CodeUnreachable, "daemon exited during start-up (%v): %s (log: %s)", err, strings.TrimPrefix(lastLogLine(logPath, start), "agent-worker: "), logPath)
		case <-deadline.C:
			return api.DaemonInfo{}, api.Errorf(api.CodeUnreachable, "daemon did not start within %s: see %s", startWait, logPath)
		case <-ctx.Done():
			return api.DaemonInfo{}, ctx.Err()
		}
	}
}

func (e *env) awaitDaemonFile(ctx context.Context, wait time.Duration) (api.DaemonInfo, bool) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		if d, err := api.ReadDaemonInfo(e.home); err == nil && api.ProcessAlive(d.PID) {
			return d, true
		}
		select {
		case <-ctx.Done():
			return api.DaemonInfo{}, false
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// lastLogLine returns the last line the daemon logged after offset, which
// is usually the reason it stopped.
func lastLogLine(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "no log"
	}
	defer f.Close()
	_, _ = f.Seek(offset, 0)
	last := "no output"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	return last
}

// remoteDaemon is the daemon AGENT_WORKER_URL names (http://host:port or
// https://host:port), with its token and, over https, the fingerprint
// its certificate must have ("" to verify it by the system's roots).
func remoteDaemon(raw, token, fingerprint string) (api.DaemonInfo, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		return api.DaemonInfo{}, usagef("AGENT_WORKER_URL=%q: give the daemon's address as https://host:port (or http://host:port)", raw)
	}
	var tlsInfo *api.TLSInfo
	switch {
	case fingerprint != "" && u.Scheme != "https":
		return api.DaemonInfo{}, usagef("AGENT_WORKER_TLS_FINGERPRINT is set but AGENT_WORKER_URL=%q is not https: a certificate is pinned only over https", raw)
	case fingerprint != "":
		fp, err := api.ParseFingerprint(fingerprint)
		if err != nil {
			return api.DaemonInfo{}, usagef("AGENT_WORKER_TLS_FINGERPRINT: %v", err)
		}
		tlsInfo = &api.TLSInfo{Fingerprint: fp}
	}
	if token == "" {
		return api.DaemonInfo{}, usagef("AGENT_WORKER_URL is set but AGENT_WORKER_TOKEN is not: give the daemon's token (the token in its daemon.json; every member of a cluster has the same)")
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return api.DaemonInfo{}, usagef("AGENT_WORKER_URL=%q: bad port", raw)
	}
	d := api.DaemonInfo{Host: u.Hostname(), Port: port, Token: token, TLS: tlsInfo}
	if u.Scheme == "https" {
		d.Scheme = "https"
	}
	return d, nil
}
