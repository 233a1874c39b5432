package api

import (
	"time"

	"github.com/agent-worker/agent-worker/sdk/tools"
)

// EffortPhase is one phase of a skill as an effort shows it: its name,
// instructions, proof fields, evidence and artifacts.
type EffortPhase = tools.EffortPhase

// EffortProofField is one proof field a phase asks for.
type EffortProofField = tools.EffortProofField

// Skill is one skill as `skills list` and `skills show` print it.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Path is the SKILL.md it was read from.
	Path   string              `json:"path"`
	Phases []tools.EffortPhase `json:"phases"`
	// Directives are the directive files the skill brings into context.
	Directives []string `json:"directives,omitempty"`
	Next       []string `json:"next,omitempty"`
}

// SkillList is GET /skills: the skills a workflow's agents (or, without
// one, any agent) find, the folders searched in order, and the files that
// could not be read (problems) or were shadowed (warnings).
type SkillList struct {
	Skills   []Skill  `json:"skills"`
	Folders  []string `json:"folders"`
	Problems []string `json:"problems,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// EffortStartRequest is POST /efforts: start an effort for Agent (a
// target, agent@wf[:tag]).
type EffortStartRequest struct {
	Agent string `json:"agent"`
	Dir   string `json:"dir"`
	Skill string `json:"skill"`
	Mode  string `json:"mode,omitempty"`
}

// EffortNextRequest is POST /efforts/next: the agent's active effort
// leaves its phase with Proof (as the CLI's --proof k=v gives it).
type EffortNextRequest struct {
	Agent string            `json:"agent"`
	Proof map[string]string `json:"proof,omitempty"`
	Notes string            `json:"notes,omitempty"`
}

// EffortLogRequest is POST /efforts/log.
type EffortLogRequest struct {
	Agent string `json:"agent"`
	Text  string `json:"text"`
}

// EffortFinishRequest is POST /efforts/finish.
type EffortFinishRequest struct {
	Agent   string            `json:"agent"`
	Abandon bool              `json:"abandon,omitempty"`
	Reason  string            `json:"reason,omitempty"`
	Notes   string            `json:"notes,omitempty"`
	Proof   map[string]string `json:"proof,omitempty"`
}

// EffortRow is one effort of the fleet view (GET /efforts).
type EffortRow struct {
	ID      string `json:"id"`
	Agent   string `json:"agent"`
	Skill   string `json:"skill"`
	Dir     string `json:"dir"`
	Ordinal int    `json:"ordinal"`
	State   string `json:"state"`
	// Phase counts from 1, of Phases; PhaseName is its name.
	Phase       int       `json:"phase"`
	Phases      int       `json:"phases"`
	PhaseName   string    `json:"phase_name"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	EndedAt     time.Time `json:"ended_at,omitzero"`
	// ContextTokens and ContextWindow are the agent's context use as last
	// reported; 0: unknown.
	ContextTokens int64  `json:"context_tokens,omitempty"`
	ContextWindow int64  `json:"context_window,omitempty"`
	Reason        string `json:"reason,omitempty"`
}

// EffortList is GET /efforts.
type EffortList struct {
	Efforts []EffortRow `json:"efforts"`
}

// EffortCheckpoint is one line of an effort's history.
type EffortCheckpoint struct {
	N         int            `json:"n"`
	Phase     int            `json:"phase"`
	PhaseName string         `json:"phase_name"`
	Kind      string         `json:"kind"`
	Proof     map[string]any `json:"proof,omitempty"`
	Notes     string         `json:"notes,omitempty"`
	Evidence  []any          `json:"evidence,omitempty"`
	Run       string         `json:"run,omitempty"`
	At        time.Time      `json:"at"`
}

// EffortShow is GET /efforts/{id}: the effort, its current phase and its
// history.
type EffortShow struct {
	EffortRow
	Mode       string             `json:"mode,omitempty"`
	Current    *tools.EffortPhase `json:"current,omitempty"`
	History    []EffortCheckpoint `json:"history"`
	Dirs       []string           `json:"dirs,omitempty"`
	Directives []string           `json:"directives,omitempty"`
	// Timeline is every phase of the effort's skill, in order, as the
	// skill was when the effort started (its snapshot).
	Timeline []tools.EffortPhase `json:"timeline,omitempty"`
	// Observations are the evidence the daemon saw, phase by phase.
	Observations []EffortObservation `json:"observations,omitempty"`
	// Artifacts are the effort's files present in its directory.
	Artifacts []EffortArtifact `json:"artifacts,omitempty"`
}

// EffortObservation is one thing the daemon saw an agent do in a phase
// of its effort: what the phase's evidence is checked against.
type EffortObservation struct {
	// Phase counts from 1; N orders the phase's observations.
	Phase int `json:"phase"`
	N     int `json:"n"`
	// Kind is shell (a command ended), file (a file was written) or tool
	// (a tool was called); Subject the command, path or tool name.
	Kind    string `json:"kind"`
	Subject string `json:"subject"`
	// Exit is a shell command's exit status; nil when not reported.
	Exit *int      `json:"exit,omitempty"`
	Run  string    `json:"run,omitempty"`
	At   time.Time `json:"at"`
}

// EffortArtifact is a file an effort writes in its directory
// (<ordinal>_<SKILL>[_KIND].md) that is there now.
type EffortArtifact struct {
	Name string `json:"name"`
	// Kind is the artifact's kind: debrief, log, plan, ….
	Kind      string    `json:"kind"`
	Size      int64     `json:"size"`
	UpdatedAt time.Time `json:"updated_at"`
}

// EffortArtifactFile is GET /efforts/{id}/artifacts/{name}: one artifact
// and its content (cut when longer than the daemon shows).
type EffortArtifactFile struct {
	EffortArtifact
	Dir       string `json:"dir"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
}

// EffortEvent is the data of the effort event of GET /events: an agent's
// effort started, entered a phase, was logged to, finished or was
// abandoned.
type EffortEvent struct {
	Agent  string `json:"agent"`
	Effort string `json:"effort"`
	// Change is what happened: "started plan", "entered verify",
	// "logged", "finished", "abandoned".
	Change string `json:"change"`
}
