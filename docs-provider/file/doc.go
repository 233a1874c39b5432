// Package file is the default document provider: each document is a real
// file under <root>/.workflow/<workflow>/<tag>/documents/, so the user can
// open, edit, grep and commit the team's documents with ordinary tools
// (ARCHITECTURE.md invariant 9). The daemon uses it unless a workflow picks
// another provider; cmd/agent-worker-docs-file wraps it as a plugin.
package file
