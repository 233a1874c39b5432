package contract

import "fmt"

// Service is what GET /identity answers in Identity.Service: the mark of
// an agent-worker daemon, whatever its version.
const Service = "agent-worker"

// Identity is GET /identity, the one route that needs no token: who
// listens at an address. A daemon that cannot take its address asks the
// holder, so that its error names the other daemon's home. PID and Home
// are told only to callers on the same machine (loopback).
type Identity struct {
	Service string `json:"service"`
	Version string `json:"version"`
	PID     int    `json:"pid,omitempty"`
	Home    string `json:"home,omitempty"`
}

// String is the holder as messages name it: "the agent-worker daemon of
// home /x (pid 12)", or "an agent-worker daemon" when it did not say.
func (id Identity) String() string {
	switch {
	case id.Home != "" && id.PID > 0:
		return fmt.Sprintf("the agent-worker daemon of home %s (pid %d)", id.Home, id.PID)
	case id.Home != "":
		return "the agent-worker daemon of home " + id.Home
	}
	return "an agent-worker daemon"
}
