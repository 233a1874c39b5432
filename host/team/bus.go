package team

import (
	"sync"

	"github.com/agent-worker/agent-worker/store"
)

// Event kinds published on the Bus.
const (
	// EventMessage: a message was appended to a channel.
	EventMessage = "message"
	// EventWake: an agent has something new in its inbox.
	EventWake = "wake"
	// EventRunStarted, EventRunFinished, EventRunFailed: a run's life.
	EventRunStarted  = "run_started"
	EventRunFinished = "run_finished"
	EventRunFailed   = "run_failed"
	// EventAgentState: an agent changed state (idle, running, failed).
	EventAgentState = "agent_state"
	// EventWorkflow: a workflow was started or reloaded, or an edit was
	// rejected or waits for its owner (State says which; Error why); Agent
	// carries only the scope.
	EventWorkflow = "workflow"
	// EventTool: an agent's backend called a tool (Tool set).
	EventTool = "tool"
	// EventWorktree: an agent's git worktree and branch were tidied away
	// once nothing in them would be lost (State "removed"). Internal: not
	// streamed to clients.
	EventWorktree = "worktree"
	// EventCancelRun: a user cancelled run State of Agent through a cluster
	// member that does not run it; the member that does ends it. Internal:
	// not streamed to clients.
	EventCancelRun = "cancel_run"
	// EventEffort: an agent's effort started, moved to a phase, logged,
	// finished or was abandoned (State says what, e.g. "effort-3
	// test-first"); the channel stays quiet (host/efforts).
	EventEffort = "effort"
	// EventGate: the daemon's gate refused a tool call of an agent's live
	// session (Tool the call, Error the reason, State the session's id).
	EventGate = "gate"
)

// RunInfo describes a run in run events.
type RunInfo struct {
	ID         string `json:"id"`
	Attempt    int    `json:"attempt"`
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
}

// ToolInfo describes a tool call in EventTool.
type ToolInfo struct {
	Name string `json:"name"`
	Args string `json:"args,omitempty"`
}

// Event is something that happened in a team, for in-process listeners (the
// scheduler, SSE streams). The store is the source of truth; an event is
// only a hint to go and look.
type Event struct {
	Kind    string
	Agent   store.AgentKey // wake, run and state events
	Message *store.Message // EventMessage
	Run     *RunInfo       // run events
	Tool    *ToolInfo      // EventTool
	State   string         // EventAgentState, EventWorktree
	Error   string         // EventAgentState, EventWorkflow: what went wrong
	// Remote marks an event another cluster member published, relayed
	// here (host/cluster): it is not relayed again, and the scheduler
	// leaves the turn it may ask for to the member that published it.
	Remote bool
}

// Bus fans events out to subscribers. Publishing never blocks and holds no
// subscriber up: each subscriber has its own bounded queue, and one whose
// queue is full is dropped (removed, and its Dropped channel closed) rather
// than left to lose events silently. A dropped subscriber re-reads the
// store and subscribes again (the scheduler) or tells its client to
// reconnect (an event stream).
type Bus struct {
	// mu guards subs.
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// Subscription is one listener's queue.
type Subscription struct {
	C       <-chan Event
	c       chan Event
	dropped chan struct{} // closed when the bus dropped this subscriber
	bus     *Bus
}

// Dropped is closed when the subscriber fell behind (its queue was full)
// and the bus stopped delivering to it. Events already queued in C stay
// readable; nothing more arrives.
func (s *Subscription) Dropped() <-chan struct{} { return s.dropped }

// Close stops delivery; C is not closed, so readers select on their own
// context.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	delete(s.bus.subs, s)
	s.bus.mu.Unlock()
}

// Subscribe registers a listener with a queue of size buffer.
func (b *Bus) Subscribe(buffer int) *Subscription {
	c := make(chan Event, buffer)
	s := &Subscription{C: c, c: c, dropped: make(chan struct{}), bus: b}
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[*Subscription]struct{}{}
	}
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Publish delivers e to every subscriber and drops those with no room.
func (b *Bus) Publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.c <- e:
		default:
			delete(b.subs, s)
			close(s.dropped)
		}
	}
}
