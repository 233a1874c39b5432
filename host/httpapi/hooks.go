package httpapi

import (
	"io"
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/triggers"
)

// handleHook takes a webhook delivery: POST /hooks/{workflow}/{name}
// [?tag=T]. It reads the raw body (the signature covers its exact bytes,
// at most MaxBodyBytes) and answers 202 with the posted message, or 200
// for a delivery id already posted or an event the trigger does not take.
func (h *Server) handleHook(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		return err
	}
	tag := r.URL.Query().Get("tag")
	if tag == "" {
		tag = api.DefaultTag
	}
	res, err := h.hooks.Deliver(r.Context(), triggers.Delivery{Workflow: r.PathValue("workflow"), Tag: tag, Trigger: r.PathValue("name"),
		Header: r.Header, Body: body})
	if err != nil {
		return err
	}
	status := http.StatusAccepted
	if res.Duplicate || res.Ignored != "" {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
	return nil
}
