package httpapi

import (
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
)

// handleDoctor is GET /doctor: what `agent-worker doctor` asks the
// daemon beyond /health (names of the variables its plugins inherit,
// never values; its disk).
func (h *Server) handleDoctor(w http.ResponseWriter, r *http.Request) error {
	if h.doctor == nil {
		return api.Errorf(api.CodeNotFound, "this daemon does not serve /doctor")
	}
	writeJSON(w, http.StatusOK, h.doctor(r.Context()))
	return nil
}
