// Package sandbox is where the daemon decides what a run may reach, in one
// place: the agent's sandbox config, the run's directories and what its
// backend needs become a plain sdk/sandbox.Policy (Policy for a run, Base
// for a warm spare's first layer), and whether this machine can confine
// runs at all (--sandbox required|auto|off). The run supervisor
// (host/runner) calls it when it starts a run's or a warm spare's process,
// and starts the process confined with sdk/sandbox.StartConfined.
package sandbox
