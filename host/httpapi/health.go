package httpapi

import (
	"context"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// runningWorkers lists the runs in flight with their heartbeat age, read
// from the workers table the supervisor keeps fresh.
func (h *Server) runningWorkers(ctx context.Context) ([]api.Worker, error) {
	ws, err := h.db.ListWorkers(ctx)
	if err != nil {
		return nil, err
	}
	now := h.now() // the store's clock, which wrote the heartbeats
	out := make([]api.Worker, 0, len(ws))
	for _, w := range ws {
		if w.State == store.WorkerSpare {
			continue // waiting for a run; GET /plugins counts them
		}
		out = append(out, api.Worker{Run: w.RunID, Agent: targetOf(w.Agent).Display(), Backend: w.Backend, PID: w.PID,
			StartedAt: w.StartedAt, HeartbeatAt: w.HeartbeatAt, HeartbeatAgeMS: max(now.Sub(w.HeartbeatAt).Milliseconds(), 0)})
	}
	return out, nil
}

// storeHealth reports the database file's health and, when it cannot
// save, the problem status lists.
func (h *Server) storeHealth() (api.StoreHealth, []string) {
	sh := h.db.Health()
	out := api.StoreHealth{Path: sh.Path, Linked: sh.Linked, Failing: sh.Failing(), LastError: sh.LastError}
	if !sh.LastErrorAt.IsZero() {
		at := sh.LastErrorAt.UTC()
		out.LastErrorAt = &at
	}
	var problems []string
	switch {
	case !sh.Linked:
		problems = append(problems, "store: the database file "+sh.Path+" was deleted or replaced; nothing is saved until the daemon restarts")
	case sh.Failing():
		problems = append(problems, "store: the last write failed at "+sh.LastErrorAt.Local().Format("15:04:05")+": "+sh.LastError)
	}
	return out, problems
}
