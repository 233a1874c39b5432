package runspec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// Outcome is what a finished run produced.
type Outcome struct {
	Run       store.Run
	Result    string
	Usage     backend.Usage
	SessionID string
	Events    int
	// Unwritten are the transcript's last events, which the run's end
	// writes with it: Settle passes them to store.Settlement.Events.
	Unwritten []store.RunEvent
}

// RunSpec is one run to supervise.
type RunSpec struct {
	// ID is the run's id (NewRunID); empty gets a new one. A caller that
	// sets it can name the run, e.g. to cancel it, before it has started.
	ID      string
	Agent   store.Agent
	Attempt int // from 1
	// InboxUntil is the newest inbox seq the run will be shown (the oldest
	// page of my_inbox): what a successful run acks.
	InboxUntil int64
	// Inbox is the messages up to InboxUntil that the run is shown, which
	// its transcript records as its prompt with the system prompt.
	Inbox []store.Message
	// OnStart is called when the backend's Run is entered; OnEvent for each
	// event as it arrives. Either may be nil.
	OnStart func(runID string)
	OnEvent func(backend.Event)
	// Settle, when set, records a successful run's end itself, together
	// with what must commit with it (the scheduler's ack and reply, in one
	// store.SettleRun), once the plugin process is gone. If it fails, the
	// run is recorded as failed with its error instead.
	Settle func(ctx context.Context, out Outcome, usage json.RawMessage) error
	// Context, when set, is what the run is shown at its start instead of
	// what the daemon's tools show now: a replay's recorded context.
	Context *backend.RunContext
}

// NewRunID returns a fresh run id: "run_" and 16 hex digits.
func NewRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "run_" + hex.EncodeToString(b)
}
