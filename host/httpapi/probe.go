package httpapi

import (
	"context"
	"net/http"
	"time"
)

// The probes of a service manager, a load balancer or a cluster's
// orchestrator: no token (they have none), and no details beyond the
// status, so an unauthenticated caller learns only that the daemon is up
// and whether its store answers. GET /health, behind the token, says why.

// readyTimeout bounds the readiness probe's store query: a store that does
// not answer within it is not ready, and a probe must not hang.
const readyTimeout = 2 * time.Second

// handleLiveness is GET /healthz: 200 for as long as the daemon serves
// HTTP at all.
func (h *Server) handleLiveness(w http.ResponseWriter, _ *http.Request) {
	probeAnswer(w, http.StatusOK, "ok\n")
}

// handleReadiness is GET /readyz: 200 when the store answers a cheap
// query, 503 otherwise (an outage of PostgreSQL, a damaged file).
func (h *Server) handleReadiness(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if h.ready == nil || h.ready(ctx) != nil {
		probeAnswer(w, http.StatusServiceUnavailable, "unavailable\n")
		return
	}
	probeAnswer(w, http.StatusOK, "ok\n")
}

func probeAnswer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}
