// Package workflows runs workflow instances: parsing a workflow file
// (through package workflow), its setup steps and params, starting it
// under a tag (its agents created and scheduled, its kickoff posted),
// reconciling its agents when the file is edited (hot reload; a bad edit
// is recorded and changes nothing that runs), stopping it, restoring the
// watched files after a restart, and reporting a team's progress.
//
// It may import the store, host/team, host/api, host/agents (the backend
// resolver), host/internal and workflow; the scheduler and the plugin
// catalog reach it as small interfaces. It never imports host/ itself or
// the HTTP layer.
package workflows
