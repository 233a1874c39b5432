package httpapi

import (
	"context"
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
)

// Replays runs recorded runs again (host/replay.Service).
type Replays interface {
	Replay(ctx context.Context, runID string) (contract.Replay, error)
}

// handleReplayRun is POST /runs/{id}/replay: the run again, in a scratch
// team, answered once the replay has ended, with where it diverged.
func (h *Server) handleReplayRun(w http.ResponseWriter, r *http.Request) error {
	if h.replays == nil {
		return api.Errorf(api.CodeUnavailable, "this daemon does not replay runs")
	}
	out, err := h.replays.Replay(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
