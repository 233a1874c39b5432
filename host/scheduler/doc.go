// Package scheduler decides when each agent runs: one loop per agent woken
// by new inbox messages (coalesced), the inbox poll, and its interval or
// cron schedule; a FIFO semaphore capping runs daemon-wide; retries with
// jittered exponential backoff; settling a successful run (ack, reply and
// run end in one store transaction); and following a run for `ask` and
// `serve` (Ask, Watch) without ever blocking the run on a slow watcher.
//
// It runs nothing itself: each attempt goes to the Runner it is given
// (the plugin supervisor). It may import the store, host/team (to post and
// to publish events), host/api (errors, wire results), host/runspec (the
// RunSpec and Outcome types, NewRunID) and workflow (the schedule parser); never
// host/ itself, the workflows or the HTTP layer.
package scheduler
