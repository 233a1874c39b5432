// Package sqlitedocs is the document provider that keeps a team's documents
// in a SQLite database file of its own, for users who want them in one
// portable file instead of a folder tree, or on file systems where many
// small files are slow. It never opens the daemon's database (ARCHITECTURE.md
// invariant 5) and refuses any file that is not its own.
// cmd/agent-worker-docs-sqlite wraps it as a plugin.
package sqlitedocs
