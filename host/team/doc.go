// Package team is the daemon's team context engine: the channel with its
// mention rules, inboxes, documents (with documentOwner enforced before any
// provider is called), proposals and resources, over the store. The MCP
// server and the HTTP API are thin adapters over Service; the scheduler
// listens to its Bus for wakes.
package team
