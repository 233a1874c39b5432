package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Runtime file names under the home directory.
const (
	DaemonFile = "daemon.json"
	LockFile   = "daemon.lock"
	DBFile     = "agent-worker.db"
	LogDir     = "logs"
)

// DaemonInfo is daemon.json: how a client finds and authenticates to the
// running daemon. The file is mode 0600 because Token grants full control.
type DaemonInfo struct {
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	Port      int       `json:"port"`
	Token     string    `json:"token"`
	StartedAt time.Time `json:"started_at"`
	Version   string    `json:"version,omitempty"`
	// Scheme is "https" when the daemon serves TLS (--tls); empty is
	// plain HTTP.
	Scheme string `json:"scheme,omitempty"`
	// TLS is the certificate a client checks when Scheme is https.
	TLS *TLSInfo `json:"tls,omitempty"`
}

// URL is the base URL of the daemon's HTTP API.
func (d DaemonInfo) URL() string {
	scheme := "http"
	if d.Scheme == "https" {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
}

// DefaultHome is $AGENT_WORKER_HOME, else ~/.agent-worker.
func DefaultHome() string {
	if h := os.Getenv("AGENT_WORKER_HOME"); h != "" {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".agent-worker")
	}
	return ".agent-worker"
}

// ErrNoDaemon says daemon.json is absent: no daemon has started on this home
// or the last one stopped cleanly.
var ErrNoDaemon = errors.New("no daemon running")

// ReadDaemonInfo reads home/daemon.json. It returns ErrNoDaemon when the file
// does not exist.
func ReadDaemonInfo(home string) (DaemonInfo, error) {
	var d DaemonInfo
	b, err := os.ReadFile(filepath.Join(home, DaemonFile))
	if errors.Is(err, os.ErrNotExist) {
		return d, ErrNoDaemon
	}
	if err != nil {
		return d, fmt.Errorf("read daemon file: %w", err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("daemon file %s is corrupt (%v): remove it and retry", filepath.Join(home, DaemonFile), err)
	}
	return d, nil
}

// WriteDaemonInfo writes home/daemon.json atomically (temp file + rename)
// with mode 0600, so a reader never sees half a file or a readable token.
func WriteDaemonInfo(home string, d DaemonInfo) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(home, ".daemon-*.json")
	if err != nil {
		return fmt.Errorf("write daemon file: %w", err)
	}
	defer os.Remove(f.Name()) // no-op after the rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("write daemon file: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write daemon file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write daemon file: %w", err)
	}
	if err := os.Rename(f.Name(), filepath.Join(home, DaemonFile)); err != nil {
		return fmt.Errorf("write daemon file: %w", err)
	}
	return nil
}

// LockHolder is the pid written in home's daemon.lock by the daemon that
// took the lock last (0 when there is none): a daemon holds the lock from
// its first step, long before it publishes daemon.json.
func LockHolder(home string) int {
	b, err := os.ReadFile(filepath.Join(home, LockFile))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// ProcessAlive reports whether pid names a live process. A daemon.json whose
// pid is dead was left by a daemon that was killed. A zombie (exited, not yet
// reaped by its parent) counts as dead.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// /proc/<pid>/stat is "pid (comm) state …"; comm may contain spaces.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		_, noProc := os.Stat("/proc/self/stat")
		return noProc != nil // without /proc, trust kill(0); with it, the process just went
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}
