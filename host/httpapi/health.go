package httpapi

import (
	"context"
	"os"

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

// healthWithoutStore is GET /health while the store cannot answer (it
// cannot be reached, or it is damaged): the daemon's own facts and the
// store's state, nothing read from it.
func (h *Server) healthWithoutStore(err error) api.Health {
	now := h.now()
	st, problems := h.storeHealth()
	if st.CorruptSince == nil { // damage is its own state, with its own problem line
		since := h.unreachable.Load()
		if since == nil {
			h.unreachable.CompareAndSwap(nil, &now)
			since = h.unreachable.Load()
		}
		at := since.UTC()
		st.UnreachableSince, st.LastError = &at, err.Error()
		problems = append(problems, "store: UNREACHABLE since "+since.Local().Format("15:04:05")+" ("+err.Error()+"): requests that need it answer 503 until it is back")
	}
	return api.Health{
		Status: "degraded", Version: api.Version, PID: os.Getpid(),
		Listen: h.listen, Home: h.home, Database: h.db.Path(),
		StartedAt: h.startedAt.UTC(), UptimeMS: now.Sub(h.startedAt).Milliseconds(),
		Agents: []api.Agent{}, Workflows: []api.Workflow{}, Plugins: h.plugins(), Problems: problems, Workers: []api.Worker{},
		Store: st, Sandbox: h.sandbox, Processes: h.processes, TLS: h.info().TLS, ListenFallback: h.fallback,
	}
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
	if !sh.CorruptSince.IsZero() {
		at := sh.CorruptSince.UTC()
		out.CorruptSince, out.Corrupt = &at, sh.Corrupt
	}
	var problems []string
	switch {
	case !sh.CorruptSince.IsZero():
		todo := "the database file " + sh.Path + " is damaged; requests that touch the damage answer 503: stop the daemon and restore a backup made by `agent-worker backup` (see `agent-worker backup --help`)"
		if h.db.Cluster() {
			todo = "the PostgreSQL database " + sh.Path + " reports damaged data; requests that touch it answer 503: restore it from your PostgreSQL backups"
		}
		problems = append(problems, "store: CORRUPT since "+sh.CorruptSince.Local().Format("15:04:05")+" ("+sh.Corrupt+"): "+todo)
	case !sh.Linked:
		problems = append(problems, "store: the database file "+sh.Path+" was deleted or replaced; nothing is saved until the daemon restarts")
	case sh.Failing():
		problems = append(problems, "store: the last write failed at "+sh.LastErrorAt.Local().Format("15:04:05")+": "+sh.LastError)
	}
	return out, problems
}
