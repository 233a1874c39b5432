// Package metrics holds the daemon's Prometheus metrics, served on
// GET /metrics behind the daemon's bearer token: runs by backend and
// state, run durations, how long a message waited for the run that reads
// it, MCP tool calls and their latency, inbox depth per agent, plugin
// processes alive and restarted, tokens and cost per workflow, store write
// latency, and the Go runtime and process collectors.
//
// The registry is the daemon's own (never the global default), so two
// daemons in one test process do not share counters. The parts never see
// it: each receives *Metrics as a small interface it declares itself
// (scheduler.Observer, plugins.Observer, a func for mcpserver and the
// store), and host/ wires them. It imports host/api (run states), the
// store (the inbox depths it reads at scrape time) and sdk/backend (run
// usage); nothing imports it but host/.
package metrics
