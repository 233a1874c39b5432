package skill

import (
	"fmt"
	"regexp"
	"strings"
)

// A Skill is a parsed, valid SKILL.md: the procedure an effort walks.
type Skill struct {
	Name        string
	Description string
	// Path is the file it was read from, absolute; "" for content given
	// without a file.
	Path string
	// Body is the Markdown after the front matter: the skill's general
	// instructions, which hold for every phase.
	Body string
	// Phases are walked in this order, one at a time.
	Phases []*Phase
	// Next names the skills suggested once this one is finished.
	Next []string
	// Directives are file names (AGENTS.md) whose copies in the
	// directories an agent touches are brought into its context.
	Directives []string
	// Heartbeat is the skill's heartbeat gate, for every phase that sets
	// none of its own; nil: off.
	Heartbeat *Heartbeat
}

// MaxHeartbeatEvery bounds a heartbeat's every.
const MaxHeartbeatEvery = 10000

// Heartbeat is the heartbeat gate (`heartbeat: {every: N}`): after Every
// tool calls of the agent without an effort log entry, the next call is
// refused until it logs its progress. Every 0 is off.
type Heartbeat struct {
	Every int
}

// HeartbeatEvery is how many tool calls the phase allows between two
// effort log entries: its own heartbeat's, else its skill's; 0 is off.
func (p *Phase) HeartbeatEvery() int {
	switch {
	case p.Heartbeat != nil:
		return p.Heartbeat.Every
	case p.skill != nil && p.skill.Heartbeat != nil:
		return p.skill.Heartbeat.Every
	}
	return 0
}

// HeartbeatReason is why agent's call is refused by the heartbeat gate
// after calls tool calls without an effort log entry, in words a model
// acts on.
func (p *Phase) HeartbeatReason(calls int, agent string) string {
	return fmt.Sprintf("log your progress first (the effort_log tool, or in a shell: agent-worker effort log \"what you did, what comes next\" --agent %s): %d tool calls since your last entry, and phase %s of skill %s asks for one at least every %d",
		agent, calls, p.Name, p.skill.Name, p.HeartbeatEvery())
}

// Phase is the phase called name, or nil.
func (s *Skill) Phase(name string) *Phase {
	for _, p := range s.Phases {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// PhaseNames are the phases' names in order, for messages and did-you-mean.
func (s *Skill) PhaseNames() []string {
	names := make([]string, len(s.Phases))
	for i, p := range s.Phases {
		names[i] = p.Name
	}
	return names
}

// A Phase is one step of a skill: what to do, which tools may be used
// meanwhile, and what it takes to leave it.
type Phase struct {
	Name string
	// Index is the phase's place in the skill, from 0.
	Index int
	// Instructions are Markdown; {{artifact KIND}} stands for the file
	// of that artifact (Expand).
	Instructions string
	// Tools limits the tool calls made during the phase; nil: no limit.
	Tools *Tools
	// Proof are the fields the agent gives to leave the phase, in the
	// order written.
	Proof []ProofField
	// Evidence is what the daemon must have seen during the phase before
	// it may end.
	Evidence []Evidence
	// Artifacts are the kinds of file the phase writes (plan, log, debrief).
	Artifacts []string
	// Heartbeat overrides the skill's heartbeat gate for this phase; nil
	// keeps the skill's (HeartbeatEvery).
	Heartbeat *Heartbeat

	skill *Skill
}

// Skill is the skill the phase belongs to.
func (p *Phase) Skill() *Skill { return p.skill }

// Later are the phases after p, in order.
func (p *Phase) Later() []*Phase { return p.skill.Phases[p.Index+1:] }

// A ProofType is the type of a proof field's value.
type ProofType string

// The proof types. A list is a list of strings.
const (
	ProofString ProofType = "string"
	ProofInt    ProofType = "int"
	ProofNumber ProofType = "number"
	ProofBool   ProofType = "bool"
	ProofList   ProofType = "list"
)

// ProofTypes are the types a proof field may have, in the order messages
// list them.
var ProofTypes = []ProofType{ProofString, ProofInt, ProofNumber, ProofBool, ProofList}

// A ProofField is a named value the agent must supply to leave a phase.
type ProofField struct {
	Name        string
	Type        ProofType
	Description string
	// Optional fields may be left out; the others are required.
	Optional bool
}

// An EvidenceKind says what was observed: a shell command that ran, a file
// written, or a tool called.
type EvidenceKind string

// The evidence kinds, which are also the keys of an evidence entry.
const (
	EvidenceShell EvidenceKind = "shell"
	EvidenceFile  EvidenceKind = "file"
	EvidenceTool  EvidenceKind = "tool"
)

// Evidence is one thing the daemon must have observed in a phase before
// the phase may end.
type Evidence struct {
	Kind EvidenceKind
	// Pattern is a glob over the shell command, the file's path (relative
	// to the effort's directory) or the tool's name.
	Pattern string
	// Exit is the exit status a shell command must have ended with,
	// 0 unless the file says otherwise; AnyExit when it says exit: any.
	Exit    int
	AnyExit bool
}

// String is the entry as written in the file, for messages.
func (e Evidence) String() string {
	s := fmt.Sprintf("{%s: %q", e.Kind, e.Pattern)
	if e.Kind == EvidenceShell {
		if e.AnyExit {
			s += ", exit: any"
		} else {
			s += fmt.Sprintf(", exit: %d", e.Exit)
		}
	}
	return s + "}"
}

// KindDebrief is the artifact every effort ends with; its file has no
// suffix (1_IMPLEMENT.md), every other kind's file has its kind as one
// (1_IMPLEMENT_LOG.md, 1_IMPLEMENT_PLAN.md).
const KindDebrief = "debrief"

// ArtifactFile is the file name of an effort's artifact of kind: the
// effort's ordinal in its directory, the skill's name in capitals, and the
// kind, e.g. 1_IMPLEMENT_PLAN.md.
func ArtifactFile(ordinal int, skill, kind string) string {
	name := fmt.Sprintf("%d_%s", ordinal, strings.ToUpper(strings.ReplaceAll(skill, "-", "_")))
	if kind != KindDebrief {
		name += "_" + strings.ToUpper(kind)
	}
	return name + ".md"
}

// artifactRE finds {{artifact KIND}} (spaces inside the braces allowed) and
// any other {{word …}} whose word could be a misspelt "artifact".
var artifactRE = regexp.MustCompile(`\{\{\s*([A-Za-z_]+)\s+([^{}]*?)\s*\}\}`)

// Expand replaces each {{artifact KIND}} in text (a phase's instructions
// or the skill's body) with the file name of that artifact for the effort
// numbered ordinal. Other {{…}} text is left as it is.
func (s *Skill) Expand(text string, ordinal int) string {
	return artifactRE.ReplaceAllStringFunc(text, func(m string) string {
		sub := artifactRE.FindStringSubmatch(m)
		if sub[1] != "artifact" {
			return m
		}
		return ArtifactFile(ordinal, s.Name, sub[2])
	})
}
