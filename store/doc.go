// Package store is the daemon's single source of truth: agents, workflows,
// messages, inbox cursors, proposals, resources, runs, workers, tasks and
// efforts (a skill walked phase by phase in a directory, with its
// checkpoints and observations) live in one SQLite file (WAL mode), or one
// PostgreSQL database in cluster mode, and nowhere else.
//
// Only the daemon's kernel (host and its parts) imports it; plugins never open
// the database.
// The schema is a sequence of embedded SQL migrations, applied in order and
// pinned by their sha256 so that an edited migration stops start-up instead
// of silently diverging. Every write is a single immediate transaction, and
// failures a caller can act on come back as *api.Error with a code (errors.go).
package store
