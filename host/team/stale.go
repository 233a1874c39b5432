package team

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// StaleAfter is how long an attached Claude Code session may call no hook
// before it counts as stale: a session that works calls one at every tool
// call and every prompt, so five silent minutes mean it hangs, or ended
// without its SessionEnd (a killed terminal).
const StaleAfter = 5 * time.Minute

// SessionStale reports whether s has called no hook for StaleAfter at now.
// A stale session leaves its agent idle (not attached) and is a problem
// in status, the console and doctor until it calls a hook again or ends.
func SessionStale(s store.Session, now time.Time) bool { return now.Sub(s.HeartbeatAt) >= StaleAfter }

// StaleSessions tells each team, once per silence, that an agent's live
// session went stale: a system line on the channel says the agent is
// idle again and how the session comes back. It keeps what it announced
// in memory: a daemon that restarts announces a silence still going on
// once more, which is all it costs.
type StaleSessions struct {
	svc *Service
	now func() time.Time

	// mu guards told: the heartbeat of each session whose silence was
	// announced, by session id.
	mu   sync.Mutex
	told map[string]time.Time
}

// NewStaleSessions watches the sessions of svc's store by the clock now.
func NewStaleSessions(svc *Service, now func() time.Time) *StaleSessions {
	if now == nil {
		now = time.Now
	}
	return &StaleSessions{svc: svc, now: now, told: map[string]time.Time{}}
}

// Run sweeps every interval until ctx ends.
func (w *StaleSessions) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := w.Sweep(ctx); err != nil && ctx.Err() == nil {
				w.svc.log.Warn("stale sessions", "error", err)
			}
		}
	}
}

// Sweep announces the sessions that went stale since the last sweep and
// returns how many it announced.
func (w *StaleSessions) Sweep(ctx context.Context) (int, error) {
	sessions, err := w.svc.db.Sessions(ctx)
	if err != nil {
		return 0, err
	}
	now := w.now()
	w.mu.Lock()
	live := map[string]bool{}
	var fresh []store.AgentKey
	for k, s := range sessions {
		live[s.ID] = true
		if SessionStale(s, now) && !w.told[s.ID].Equal(s.HeartbeatAt) {
			w.told[s.ID] = s.HeartbeatAt
			fresh = append(fresh, k)
		}
	}
	for id := range w.told {
		if !live[id] {
			delete(w.told, id) // ended or taken over
		}
	}
	w.mu.Unlock()
	for _, k := range fresh {
		s := sessions[k]
		target := api.Target{Agent: k.Name, Workflow: k.Workflow, Tag: k.Tag}.Display()
		line := fmt.Sprintf("%s is idle again: its Claude Code session %s (in %s) has called no hook for %s, so it counts as gone. "+
			"Its next hook attaches it again; a new session started there with the hooks of `agent-worker hooks install %s` does too.",
			target, s.ID, s.Cwd, now.Sub(s.HeartbeatAt).Round(time.Second), target)
		if _, err := w.svc.Send(ctx, SendRequest{Scope: k.Scope(), From: SenderSystem, Kind: store.KindSystem, Content: line}); err != nil {
			w.svc.log.Warn("stale session: post the notice", "agent", k.String(), "error", err)
			continue
		}
		w.svc.log.Warn("session stale", "agent", k.String(), "session", s.ID, "heartbeat", s.HeartbeatAt)
		w.svc.Bus.Publish(Event{Kind: EventAgentState, Agent: k, State: string(api.AgentIdle)})
	}
	return len(fresh), nil
}
