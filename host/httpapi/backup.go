package httpapi

import (
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
)

// handleBackup is POST /backup: a checked copy of the SQLite database at
// an absolute path on the daemon's machine, written while the daemon
// works (store.DB.Backup). On PostgreSQL it answers 400 with the pg_dump
// command that backs a cluster up.
func (h *Server) handleBackup(w http.ResponseWriter, r *http.Request) error {
	var req contract.BackupRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Path == "" {
		return api.Errorf(api.CodeInvalid, "path is required: where to write the backup")
	}
	b, err := h.db.Backup(r.Context(), req.Path, req.Force)
	if err != nil {
		return err
	}
	h.log.Info("database backed up", "path", b.Path, "bytes", b.Bytes, "ms", b.Took.Milliseconds())
	writeJSON(w, http.StatusCreated, contract.Backup{Path: b.Path, Database: h.db.Path(), Bytes: b.Bytes, TookMS: b.Took.Milliseconds()})
	return nil
}
