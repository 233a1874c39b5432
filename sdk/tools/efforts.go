package tools

import "time"

// The effort tools (issue 43): an agent walks a skill, the procedure of a
// SKILL.md, over a work directory one phase at a time. effort_start
// answers the first phase and a continue token; effort_continue gives the
// phase's proof with the token and answers the next phase and a new
// token; a token is signed by the daemon and good once.
const (
	EffortStart    = "effort_start"
	EffortContinue = "effort_continue"
	EffortStatus   = "effort_status"
	EffortLog      = "effort_log"
	EffortFinish   = "effort_finish"
)

// EffortNames are the effort tools, which a phase's tool rules never
// refuse (workflow/skill lists them too).
var EffortNames = []string{EffortStart, EffortContinue, EffortStatus, EffortLog, EffortFinish}

// Effort tool arguments.
type (
	// EffortStartArgs is effort_start's input.
	EffortStartArgs struct {
		Dir   string `json:"dir" jsonschema:"the work directory, absolute, inside your workspace"`
		Skill string `json:"skill" jsonschema:"the skill to walk, by name (e.g. implement)"`
		Mode  string `json:"mode,omitempty" jsonschema:"a word for how you work on it (e.g. solo, pair); kept with the effort"`
	}
	// EffortContinueArgs is effort_continue's input.
	EffortContinueArgs struct {
		Token string         `json:"token" jsonschema:"the continue token of the phase you are leaving, as the last effort tool answered it"`
		Proof map[string]any `json:"proof,omitempty" jsonschema:"the phase's proof: an object with the fields the phase asks for, each of its type"`
		Notes string         `json:"notes,omitempty" jsonschema:"what the next phase (or the next run) should know: decisions, dead ends, state"`
	}
	// EffortLogArgs is effort_log's input.
	EffortLogArgs struct {
		Text string `json:"text" jsonschema:"one entry for the effort's log file, e.g. a decision and why"`
	}
	// EffortFinishArgs is effort_finish's input.
	EffortFinishArgs struct {
		Token   string         `json:"token,omitempty" jsonschema:"the continue token of the last phase (omit to use your effort's current one)"`
		Abandon bool           `json:"abandon,omitempty" jsonschema:"give the effort up instead of finishing it; needs reason"`
		Reason  string         `json:"reason,omitempty" jsonschema:"why you abandon it"`
		Notes   string         `json:"notes,omitempty" jsonschema:"the debrief: what changed, what you learnt, what is left"`
		Proof   map[string]any `json:"proof,omitempty" jsonschema:"the last phase's proof"`
	}
)

// EffortProofField is a field a phase's proof must (or may) have.
type EffortProofField struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	Optional    bool   `json:"optional,omitempty"`
}

// EffortPhase is a phase of an effort's skill as an agent is shown it.
type EffortPhase struct {
	// N counts the phases from 1; Of is how many there are.
	N    int    `json:"n"`
	Of   int    `json:"of"`
	Name string `json:"name"`
	// Instructions have {{artifact KIND}} replaced by the file's name.
	Instructions string             `json:"instructions,omitempty"`
	Proof        []EffortProofField `json:"proof,omitempty"`
	// Evidence is what the daemon must see in the phase, in words;
	// Missing the part of it not seen yet.
	Evidence []string `json:"evidence,omitempty"`
	Missing  []string `json:"missing,omitempty"`
	// Artifacts are the files the phase writes, in the effort's directory.
	Artifacts []string `json:"artifacts,omitempty"`
	// Tools are the phase's tool rules in words ("" when it allows all).
	Tools string `json:"tools,omitempty"`
}

// EffortDebrief is what an earlier effort of the directory left.
type EffortDebrief struct {
	Effort  string `json:"effort"`
	Ordinal int    `json:"ordinal"`
	Skill   string `json:"skill"`
	// File is its debrief file when it exists, Text that file's content
	// or else its last notes.
	File string `json:"file,omitempty"`
	Text string `json:"text"`
}

// EffortResult is what the effort tools answer: the effort and where it
// stands. Phase is the phase to work on now (none once ended); Token
// leaves it and is shown only to the effort's agent.
type EffortResult struct {
	Effort  string `json:"effort"`
	Agent   string `json:"agent"`
	Skill   string `json:"skill"`
	Dir     string `json:"dir"`
	Ordinal int    `json:"ordinal"`
	Mode    string `json:"mode,omitempty"`
	// State is active, finished or abandoned.
	State    string          `json:"state"`
	Phase    *EffortPhase    `json:"phase,omitempty"`
	Token    string          `json:"token,omitempty"`
	Debriefs []EffortDebrief `json:"debriefs,omitempty"`
	// Earlier are what the team's search finds about the directory at the
	// start (messages, documents, run transcripts), best first.
	Earlier []SearchHit `json:"earlier,omitempty"`
	// Log is the effort's log file (effort_log appends to it).
	Log         string    `json:"log,omitempty"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// Next are the skills suggested once this one is finished.
	Next []string `json:"next,omitempty"`
}

// EffortNote is a checkpoint's notes as a resumed run reads them.
type EffortNote struct {
	Phase string    `json:"phase"`
	Notes string    `json:"notes"`
	At    time.Time `json:"at"`
}

// EffortDirective is a directive file (AGENTS.md) of a directory the
// effort works in, brought into the context once.
type EffortDirective struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// EffortContext is the active effort of the agent a run is for, part of
// its RunContext: where it stands, so that a run picks the effort up at
// its phase rather than from the start.
type EffortContext struct {
	EffortResult
	// Here says in a line where the effort was left: the last checkpoint
	// and the last log entries.
	Here  string       `json:"here"`
	Notes []EffortNote `json:"notes,omitempty"`
	// Directives are the directive files new to this effort.
	Directives []EffortDirective `json:"directives,omitempty"`
}
