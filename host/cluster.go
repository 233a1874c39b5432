package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/cluster"
	"github.com/agent-worker/agent-worker/host/plugins"
	"github.com/agent-worker/agent-worker/host/scheduler"
	"github.com/agent-worker/agent-worker/store"
)

// newMemberID names this daemon process: its host and a random suffix, so
// that a run's record says where it ran and a restart is a new member.
func newMemberID() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	if host == "" {
		host = "daemon"
	}
	return host + "-" + hex.EncodeToString(b), nil
}

// clusterID is the member id status shows, "" off a cluster.
func (h *Host) clusterID() string {
	if h.member == nil {
		return ""
	}
	return h.memberID
}

// joinCluster makes the daemon a member of the cluster on its PostgreSQL
// store: turns go through the shared job queue, and this member works its
// share of them (--max-concurrent at once).
func (h *Host) joinCluster(ctx context.Context) error {
	workers := h.cfg.Scheduler.MaxConcurrent
	if workers <= 0 {
		workers = 2 * runtime.NumCPU()
	}
	attempts := h.cfg.Scheduler.Attempts
	if attempts <= 0 {
		attempts = scheduler.DefaultAttempts
	}
	runTimeout := h.cfg.Supervisor.RunTimeout
	if runTimeout <= 0 {
		runTimeout = plugins.DefaultRunTimeout
	}
	m, err := cluster.Join(ctx, cluster.Config{
		DB: h.db, ID: h.memberID, Address: h.ln.Addr().String(), Bus: &h.team.Bus, Log: h.log.Named("cluster"),
		Workers: workers, Attempts: attempts, RescueAfter: runTimeout + time.Minute,
		Turn: h.sched.Turn, RetryDelay: h.sched.RetryDelay,
		KillOrphan: func(w store.Worker) {
			if plugins.IsPluginProcess(w.PID, w.PluginPath) {
				h.log.Warn("killing a plugin process a dead member left on this host", "run", w.RunID, "pid", w.PID, "member", w.Daemon)
				cluster.KillGroup(w.PGID)
			}
		},
	})
	if err != nil {
		return err
	}
	h.member = m
	h.sched.SetDispatcher(m)
	h.log.Info("joined the cluster", "member", h.memberID, "store", h.db.Path())
	return nil
}

// syncAgents schedules, every few seconds, the agents other members
// created: their polls and schedules then run here too, so that they go
// on when the member that created them is gone.
func (h *Host) syncAgents(ctx context.Context) {
	t := time.NewTicker(agentSync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			agents, err := h.db.ListAgents(ctx, store.AgentFilter{})
			if err != nil {
				continue
			}
			for _, a := range agents {
				h.sched.Add(a.Key())
			}
		}
	}
}

// agentSync is how often a member looks for agents created elsewhere.
const agentSync = 2 * time.Second
