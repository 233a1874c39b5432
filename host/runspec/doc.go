// Package runspec is what the scheduler and the run supervisor say to each
// other about one run: the RunSpec the scheduler hands over (agent,
// attempt, inbox, callbacks, Settle), the Outcome it gets back, and the
// run ids (NewRunID). It holds no behaviour, so the scheduler depends on
// these three names and not on the supervisor that runs the process.
//
// It imports only the store and sdk/backend.
package runspec
