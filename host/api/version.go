package api

// Version is the agent-worker release, set at build time with
// -ldflags "-X github.com/agent-worker/agent-worker/host/api.Version=v1.2.3".
var Version = "0.1.0-dev"
