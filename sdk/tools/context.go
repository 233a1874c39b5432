package tools

// RecentLimit is how many of the latest channel messages a run is shown
// when it starts: the channel tail of a RunContext, and what a worker
// without one reads with channel_read.
const RecentLimit = 50

// RunContext is what a run would read through the tools first, given to it
// by the daemon with the run request so that the model's first call needs
// no round trip to the daemon. Each part is exactly what its tool returns
// at the start of the run: Inbox is my_inbox (the messages the run is
// shown, up to the newest it acks on success), Recent is channel_read of
// the latest RecentLimit messages, Notes is team_doc_read of notes.md and
// Documents is team_doc_list. Anything later or more the run reads through
// the tools as before.
type RunContext struct {
	Inbox     InboxResult
	Recent    []Message
	Notes     string
	Documents []DocumentInfo
	// Effort is the agent's active effort, where it stands; nil: none.
	Effort *EffortContext
}
