package contract

import "time"

// ForkWorkflow is the body of POST /workflows/{name}/{tag}/fork: start
// Tag, a new tag of the workflow, from the team's state at the message
// with seq At of the channel. Run starts its agents at once; without it
// the fork starts paused, for a look before anything runs.
type ForkWorkflow struct {
	At  int64  `json:"at"`
	Tag string `json:"tag"`
	Run bool   `json:"run,omitempty"`
}

// Fork is what a fork made: the new workflow:tag, and what it copied from
// its source.
type Fork struct {
	Workflow Workflow `json:"workflow"`
	// From is the source, "@wf:tag"; At the seq forked at and AtTime when
	// that message was posted.
	From   string    `json:"from"`
	At     int64     `json:"at"`
	AtTime time.Time `json:"at_time"`
	// Messages is how many messages the fork's channel starts with: the
	// source's messages with seq ≤ At.
	Messages int `json:"messages"`
	// Tasks maps each copied task's id in the source to its id in the
	// fork.
	Tasks map[string]string `json:"tasks"`
	// Documents are the documents copied; DocumentsChanged those of them
	// changed after the fork point, copied as they are now (documents
	// keep no history).
	Documents        []string `json:"documents"`
	DocumentsChanged []string `json:"documents_changed,omitempty"`
	// Running says the fork's agents run now (--run); otherwise it is
	// paused until resumed.
	Running bool `json:"running"`
}
