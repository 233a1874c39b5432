package httpapi

import (
	"context"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
)

// cluster is status's view of the members sharing the store (nil on the
// embedded file), and what is wrong with them: members that stopped
// responding, and workflows whose file nobody watches any more.
func (h *Server) cluster(ctx context.Context, wfs []api.Workflow) (*contract.Cluster, []string, error) {
	if h.member == "" {
		return nil, nil, nil
	}
	ds, err := h.db.ListDaemons(ctx, time.Hour)
	if err != nil {
		return nil, nil, err
	}
	now := h.now()
	out := &contract.Cluster{Member: h.member}
	alive := map[string]bool{}
	var problems []string
	for _, d := range ds {
		m := contract.ClusterMember{ID: d.ID, Host: d.Host, PID: d.PID, Address: d.Address, Version: d.Version,
			StartedAt: d.StartedAt, HeartbeatAgeMS: now.Sub(d.HeartbeatAt).Milliseconds()}
		m.Alive = d.StoppedAt.IsZero() && now.Sub(d.HeartbeatAt) < h.lease
		if !d.StoppedAt.IsZero() {
			at := d.StoppedAt
			m.StoppedAt = &at
		} else if !m.Alive {
			problems = append(problems, "cluster member "+d.ID+" on "+d.Host+" stopped responding: its runs go to the other members once its lease ends")
		}
		alive[d.ID] = m.Alive
		out.Members = append(out.Members, m)
	}
	owners, err := h.db.WorkflowOwners(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, wf := range wfs {
		owner := owners[wf.Target]
		if owner != "" && !alive[owner] && wf.SourcePath != "" {
			problems = append(problems, "workflow "+wf.Target+": its file "+wf.SourcePath+" was watched by member "+owner+
				", which is gone; the team keeps running from the config in the store, and `agent-worker start "+wf.SourcePath+"` on a live member takes the file over")
		}
	}
	return out, problems, nil
}
