package httpapi

import (
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
)

// handleConsoleCode is POST /console/codes: a one-time login link to the
// web console (`agent-worker console`).
func (h *Server) handleConsoleCode(w http.ResponseWriter, r *http.Request) error {
	if h.console == nil {
		return api.Errorf(api.CodeNotFound, "this daemon serves no console")
	}
	writeJSON(w, http.StatusOK, h.console.NewLogin(h.info().URL()))
	return nil
}

// handleResource is GET /resources/{wf}/{tag}/{id}: the full content of a
// resource, such as a long message's.
func (h *Server) handleResource(w http.ResponseWriter, r *http.Request) error {
	scope, err := docScope(r)
	if err != nil {
		return err
	}
	res, err := h.team.ReadResource(r.Context(), scope, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Resource{ID: res.ID, Type: res.Type, Content: res.Content, CreatedBy: res.CreatedBy, CreatedAt: res.CreatedAt.UTC()})
	return nil
}
