package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/cluster"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/scheduler"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// memberFile keeps a home's member id, so that a restarted daemon is the
// same member coming back (and takes back what its previous process left).
const memberFile = "member-id"

// memberID names the daemon of home: its host and a random suffix, made
// once and kept in the home, so a run's record says where it ran.
func memberID(home string) (string, error) {
	path := filepath.Join(home, memberFile)
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	id, err := newMemberID()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("member id: %w", err)
	}
	return id, nil
}

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

// clusterMemberID is the member id on a PostgreSQL store, "" on the
// embedded file (before the member has joined).
func (h *Host) clusterMemberID() string {
	if h.db.Cluster() {
		return h.memberID
	}
	return ""
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
		runTimeout = runner.DefaultRunTimeout
	}
	m, err := cluster.Join(ctx, cluster.Config{
		DB: h.db, ID: h.memberID, Address: h.advertised(), Bus: &h.team.Bus, Log: h.log.Named("cluster"),
		Workers: workers, Attempts: attempts, RescueAfter: runTimeout + time.Minute,
		Turn: h.sched.Turn, RetryDelay: h.sched.RetryDelay,
		KillOrphan: func(w store.Worker) { runner.KillLeftover(w, h.log) },
		Recover:    h.recoverStranded,
		Notify:     h.notify,
	})
	if err != nil {
		return err
	}
	h.member = m
	h.sched.SetDispatcher(m)
	h.log.Info("joined the cluster", "member", h.memberID, "store", h.db.Path())
	return nil
}

// recoverOwn takes back, at start-up, what this member's previous process
// left: its runs fail, its agents go back to idle, and its plugin
// processes still alive are killed.
func (h *Host) recoverOwn(ctx context.Context) (int, error) {
	r, err := h.db.RecoverMember(ctx, h.memberID)
	if err != nil {
		return 0, err
	}
	for _, w := range r.Workers {
		runner.KillLeftover(w, h.log)
	}
	return len(r.Runs), nil
}

// recoverStranded frees what this member recorded as running but does not
// hold, which only a write lost to a store outage leaves: those runs fail,
// those agents go back to idle and are woken, and their plugin processes
// still alive are killed.
func (h *Host) recoverStranded(ctx context.Context) {
	r, err := h.db.RecoverStranded(ctx, h.memberID, h.sched.Holds)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("free runs and agents stranded by a store outage", "error", err)
		}
		return
	}
	for _, w := range r.Workers {
		runner.KillLeftover(w, h.log)
	}
	if len(r.Runs)+len(r.Agents) > 0 {
		h.log.Warn("freed runs and agents a store outage stranded", "runs", len(r.Runs), "agents", len(r.Agents))
	}
	for _, k := range r.Agents {
		h.team.Bus.Publish(team.Event{Kind: team.EventAgentState, Agent: k, State: string(api.AgentIdle)})
		h.team.Bus.Publish(team.Event{Kind: team.EventWake, Agent: k})
	}
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
