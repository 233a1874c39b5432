package runner

import (
	"context"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/spares"
	"github.com/agent-worker/agent-worker/store"
)

// The supervisor's side of its pool of warm spares (host/spares): how a
// spare's process is started and killed, and whether one fits a run.

// SpareStats returns the spare counters of every backend that has had a
// run, for GET /plugins.
func (s *Supervisor) SpareStats() map[string]api.SpareStats { return s.spares.Stats() }

// RunSpares keeps the warm spares until ctx ends (spares.Pool.Run): at
// its end every spare is killed.
func (s *Supervisor) RunSpares(ctx context.Context) { s.spares.Run(ctx) }

// takeSpare hands a run of p, confined by c, a warm spare that fits it,
// with the id of the spare's workers row; ok is false when there is none.
// What the run needs is decided between the pool's two looks, outside its
// lock: it reads the file system.
func (s *Supervisor) takeSpare(p api.Plugin, c confinement) (proc *process, id string, ok bool) {
	if !s.spares.Serves(p) {
		return nil, "", false
	}
	n := needOf(c)
	return s.spares.Take(p, func(x *process) spares.Match {
		switch {
		case n.fits(x, p):
			return spares.Fits
		case x.confined && n.confined:
			return spares.TooNarrow // its base layer is too narrow for this run
		}
		return spares.Unfit
	})
}

// startSpare starts a spare process of p, with the daemon's base
// environment in its own socket directory under its base sandbox layer,
// and records its workers row as id.
func (s *Supervisor) startSpare(p api.Plugin, id string) (*process, error) {
	log := s.log.With("spare", id, "backend", p.Name)
	proc, err := s.startProcess(p, "spare", "", nil, s.spareConfinement(context.Background(), p), log)
	if err != nil {
		return nil, err
	}
	err = s.db.AddWorker(context.Background(), store.Worker{RunID: id, State: store.WorkerSpare, PID: proc.pid, PGID: proc.pid,
		PluginPath: proc.path, PluginSHA256: p.SHA256})
	if err != nil {
		proc.stop()
		return nil, err
	}
	return proc, nil
}

// killSpare stops a spare that no run took, and forgets its row.
func (s *Supervisor) killSpare(id string, proc *process) {
	proc.stop()
	if err := s.db.RemoveWorker(context.Background(), id); err != nil {
		s.log.Warn("forget warm spare", "spare", id, "error", err)
	}
}
