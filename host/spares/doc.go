// Package spares keeps warm spare plugin processes: per backend in use, a
// pool of processes already started, handshaken and waiting for exactly
// one run each, so that a run does not wait for a cold start. It decides
// how many to keep (the --spares counts, grown to a backend's recent
// demand), replaces those whose binary changed, stops those of an idle
// backend, and counts what happens to them for GET /plugins.
//
// It starts and kills no process itself: the run supervisor (host/runner)
// gives a pool the functions that start a spare's process and kill it, and
// decides whether a spare fits a run (its sandbox). So the pool may import
// host/api and sdk/plugin only, and host/runner imports it, never the
// reverse.
package spares
