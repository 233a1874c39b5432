package tools

import "time"

// AskUserArgs is ask_user's input.
type AskUserArgs struct {
	Question string   `json:"question" jsonschema:"what you need the owner to decide or tell you, in one or a few sentences"`
	Options  []string `json:"options,omitempty" jsonschema:"the answers to choose from, if the question has a few (the owner may still answer in words)"`
	Context  string   `json:"context,omitempty" jsonschema:"what the owner needs to know to answer: what you tried, what each option means"`
}

// Question is a question an agent asked the owner (ask_user), as the
// daemon lists it: pending until answered, then with the answer and who
// gave it.
type Question struct {
	ID string `json:"id"`
	// Agent is the asking agent's full address, name@workflow:tag.
	Agent string `json:"agent"`
	// Kind is question (ask_user) or approval (a gated action waiting for
	// approve or deny; Question then says the exact action).
	Kind     string   `json:"kind"`
	Question string   `json:"question"`
	Options  []string `json:"options"`
	Context  string   `json:"context,omitempty"`
	RunID    string   `json:"run_id,omitempty"`
	// State is pending, answered, expired or cancelled; an approval's is
	// pending, approved, denied, expired or cancelled.
	State      string    `json:"state"`
	Answer     string    `json:"answer,omitempty"`
	AnsweredBy string    `json:"answered_by,omitempty"`
	AnsweredAt time.Time `json:"answered_at,omitzero"`
	CreatedAt  time.Time `json:"created_at"`
}

// ApprovalArgs is approval_wait's input.
type ApprovalArgs struct {
	Action string `json:"action" jsonschema:"the exact action you want to take, as a person should see it (the command, the branch, the file)"`
}

// ApprovalResult is approval_wait's result once a person approved; a
// denial or a timeout is the call's error.
type ApprovalResult struct {
	Approved bool `json:"approved"`
}
