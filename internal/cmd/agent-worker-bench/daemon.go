package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
)

// daemon is a real agent-worker daemon process started for one scenario,
// with its own home in a temporary directory.
type daemon struct {
	home   string
	cmd    *exec.Cmd
	client *api.Client
	info   api.DaemonInfo
	exited chan error // receives cmd.Wait's result once
	once   sync.Once  // stop's work happens once
}

// startDaemon runs `agent-worker daemon` on a free loopback port with the
// given extra flags and waits until it answers /health.
func startDaemon(ctx context.Context, cfg config, home string, extra ...string) (*daemon, error) {
	return startDaemonEnv(ctx, cfg, home, nil, extra...)
}

// startDaemonEnv is startDaemon with env added to the daemon's
// environment ("HOME=…" for a user skills folder of the row's own).
func startDaemonEnv(ctx context.Context, cfg config, home string, env []string, extra ...string) (*daemon, error) {
	args := append([]string{"daemon", "--home", home, "--listen", "127.0.0.1:0",
		"--plugins-dir", cfg.plugins, "--log-level", "warn", "--poll-interval", "1h"}, extra...)
	cmd := exec.Command(cfg.bin, args...)
	// The store is the scenario's to choose (--store in extra): a
	// cluster's AGENT_WORKER_STORE in our environment must not turn the
	// embedded-store daemons into members of it.
	base := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AGENT_WORKER_STORE=") })
	cmd.Env = append(append(base, "AGENT_WORKER_HOME="+home), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	d := &daemon{home: home, cmd: cmd, exited: exited}
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := api.ReadDaemonInfo(home)
		if err == nil && info.PID == cmd.Process.Pid && info.Port != 0 {
			d.info, d.client = info, api.NewClient(info)
			if _, err := d.client.Health(ctx); err == nil {
				return d, nil
			}
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("daemon exited at start: %v: %s", err, strings.TrimSpace(stderr.String()))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return nil, errors.New("daemon did not answer /health within 30 s")
		}
	}
}

// pid is the daemon's process id.
func (d *daemon) pid() int { return d.info.PID }

// stop asks the daemon to shut down and waits for it; a daemon that does not
// exit within 20 s is killed with its process group.
func (d *daemon) stop(ctx context.Context) {
	d.once.Do(func() {
		_ = d.client.Shutdown(ctx)
		select {
		case <-d.exited:
		case <-time.After(20 * time.Second):
			syscall.Kill(-d.info.PID, syscall.SIGKILL)
			<-d.exited
		}
	})
}

// cpuTime is the process's user+system CPU time from /proc.
func cpuTime(pid int) (time.Duration, error) {
	self, _, err := cpuTimes(pid)
	return self, err
}

// cpuTimes is the process's user+system CPU time and that of its children
// it has waited for (its plugin processes, once reaped), from /proc.
func cpuTimes(pid int) (self, children time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 15 {
		return 0, 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	var t [4]int64
	for i := range t {
		t[i], _ = strconv.ParseInt(f[11+i], 10, 64)
	}
	const hz = 100 // USER_HZ on Linux
	return time.Duration(t[0]+t[1]) * time.Second / hz, time.Duration(t[2]+t[3]) * time.Second / hz, nil
}

// rss is the process's resident set in bytes (VmRSS).
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for %d", pid)
}

// childrenRSS sums the resident sets of pid's descendants (the daemon's
// plugin processes: warm spares between runs).
func childrenRSS(pid int) (int64, int) {
	var total int64
	n := 0
	var walk func(int)
	walk = func(p int) {
		// Each thread lists the children it forked; Go forks from any thread.
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		var kids []string
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				kids = append(kids, strings.Fields(string(b))...)
			}
		}
		for _, f := range kids {
			c, _ := strconv.Atoi(f)
			if r, err := rss(c); err == nil {
				total += r
				n++
			}
			walk(c)
		}
	}
	walk(pid)
	return total, n
}

// tempHome makes a fresh daemon home under the bench's work directory.
func tempHome(cfg config, name string) (string, error) {
	dir := filepath.Join(cfg.work, name)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o700)
}

// profile starts taking the daemon's CPU profile into file (nothing when
// file is empty); the returned func ends it and waits until it is saved.
func (d *daemon) profile(ctx context.Context, file string) (stop func()) {
	if file == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The profile runs until its seconds pass or the request is cut;
		// a cut request still gets nothing, so ask for a fixed stretch that
		// ends within the load.
		req, _ := http.NewRequestWithContext(ctx, "GET", d.info.URL()+"/debug/pprof/profile?seconds=10", nil)
		req.Header.Set("Authorization", "Bearer "+d.info.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			step("cpu profile: %v", err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(file)
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			f.Close()
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			step("cpu profile: %v (HTTP %d)", err, resp.StatusCode)
			return
		}
		step("cpu profile saved to %s", file)
	}()
	return func() {
		<-done
		cancel()
	}
}
