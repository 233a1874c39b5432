// Package runner is the run supervisor: it runs each agent run as a fresh
// backend plugin process (started from the catalog's verified copy, or a
// warm spare taken from its pool), confined as host/sandbox decides and in
// a cgroup of its own with the run's limits, and makes sure it ends
// (timeouts, heartbeat, process-group kill, reaping after a crash). It
// records the run's transcript, costs it with host/prices and turns a
// backend's errors into the daemon's codes (errors.go).
//
// It may import the store, host/api (wire types and errors), host/catalog,
// host/runspec, host/prices, host/sandbox, host/spares (the pool of warm
// spares, to which it gives the functions that start and kill a spare's
// process: spare.go) and the sdk's backend, plugin and
// sandbox packages; never host/ itself, the scheduler, the workflows or
// the HTTP layer. The scheduler reaches it through the one function it is
// given (Supervisor.Run, with a runspec.RunSpec); settling a run is the
// caller's (RunSpec.Settle).
package runner
