// Package sandbox is where the daemon decides what a run may reach, in one
// place: the agent's sandbox config, the run's directories and what its
// backend needs become a plain sdk/sandbox.Policy. It also makes the
// daemon's own binary the launcher that applies a policy before any plugin
// code runs (its init), and says whether this machine can confine runs at
// all (--sandbox required|auto|off). The plugins part calls it when it
// starts a run's or a warm spare's process.
package sandbox
