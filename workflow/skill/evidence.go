package skill

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// An Observation is something the daemon saw a run do: a shell command
// that ended, a file written, a tool called. Observations come from the
// run's own tool calls and results, never from what an agent says.
type Observation struct {
	Kind EvidenceKind
	// Command is a shell observation's command line.
	Command string
	// Path is a file observation's path, relative to the effort's
	// directory, with / between its elements.
	Path string
	// Tool is a tool observation's name, as the backend gave it.
	Tool string
	// Exit is a shell command's exit status.
	Exit int
	At   time.Time
}

// A Finding says whether one evidence requirement was met, and by what.
type Finding struct {
	Evidence Evidence
	// By is the first observation that meets it; nil: none does.
	By *Observation
	// Ran is, for a shell requirement nothing met, the last observation
	// of a matching command that did not count (its exit status, or one
	// that was not the command's own), so that a refusal says what was
	// seen; nil: no matching command ran.
	Ran *Observation
}

// Findings are a phase's evidence requirements, each with what met it.
type Findings []Finding

// CheckEvidence matches the phase's evidence requirements against obs,
// the observations of this phase (the caller keeps those of earlier phases
// out). A shell requirement is met by a command line one of whose simple
// commands matches its glob (as tool rules match, the program's directory
// ignored) when the line's exit status is the command's own: the line is
// that one command, or a chain of commands joined only by &&, every one of
// which then exited 0. So `go test ./... | tail` or `go test ./...; true`
// never prove `go test ./...` passed. A requirement of a non-zero exit
// (exit: 1) is met only by the one command alone. A file requirement is
// met by a path matching its glob (a glob without / matches the last
// element), a tool requirement by a tool name matching its glob.
func (p *Phase) CheckEvidence(obs []Observation) Findings {
	out := make(Findings, len(p.Evidence))
	for i, e := range p.Evidence {
		out[i].Evidence = e
		ran := e
		ran.AnyExit = true
		for j := range obs {
			if e.metBy(obs[j]) {
				out[i].By, out[i].Ran = &obs[j], nil
				break
			}
			if e.Kind == EvidenceShell && ran.metBy(obs[j]) {
				out[i].Ran = &obs[j]
			}
		}
	}
	return out
}

func (e Evidence) metBy(o Observation) bool {
	if o.Kind != e.Kind {
		return false
	}
	switch e.Kind {
	case EvidenceFile:
		return matchPath(e.Pattern, path.Clean(o.Path))
	case EvidenceTool:
		return wild(e.Pattern, ToolName(o.Tool))
	case EvidenceShell:
		if !e.AnyExit && o.Exit != e.Exit {
			return false
		}
		var top []part
		for _, pt := range shellParts(o.Command) {
			if pt.from == fromLine {
				top = append(top, pt)
			}
		}
		rule := []Rule{{Shell: true, Pattern: e.Pattern}}
		if e.AnyExit {
			for _, pt := range top {
				if matchCommand(rule, pt) != nil {
					return true
				}
			}
			return false
		}
		if e.Exit != 0 && len(top) != 1 {
			return false
		}
		met := false
		for i, pt := range top {
			if i < len(top)-1 && pt.op != "&&" {
				return false
			}
			met = met || matchCommand(rule, pt) != nil
		}
		return met
	}
	return false
}

// Missing are the requirements nothing met.
func (fs Findings) Missing() []Evidence {
	var out []Evidence
	for _, f := range fs {
		if f.By == nil {
			out = append(out, f.Evidence)
		}
	}
	return out
}

// Err is nil when every requirement was met, else an error naming each
// missing one as phase's, a line each: "verify needs a shell command
// matching `go test ./...` that exited 0 in this phase; none was
// observed", or, when a matching command ran without counting, "...; the
// last was `go test ./...`, which exited 1".
func (fs Findings) Err(phase string) error {
	missing := fs.Missing()
	if len(missing) == 0 {
		return nil
	}
	var msgs []string
	for _, f := range fs {
		if f.By != nil {
			continue
		}
		seen := "none was observed"
		switch r := f.Ran; {
		case r != nil && r.Exit != f.Evidence.Exit:
			seen = fmt.Sprintf("the last was `%s`, which exited %d", r.Command, r.Exit)
		case r != nil:
			seen = fmt.Sprintf("the last was `%s`, whose exit status is not the command's own", r.Command)
		}
		msgs = append(msgs, phase+" needs "+f.Evidence.describe()+" in this phase; "+seen)
	}
	return &EvidenceError{Phase: phase, Missing: missing, msg: strings.Join(msgs, "\n")}
}

// describe says in words what would meet e.
func (e Evidence) describe() string {
	switch e.Kind {
	case EvidenceShell:
		s := fmt.Sprintf("a shell command matching `%s`", e.Pattern)
		switch {
		case e.AnyExit:
			return s + " to have run"
		case e.Exit == 0:
			return s + " that exited 0 (alone or in a chain joined by &&, not in a pipeline or after ; or ||)"
		}
		return s + fmt.Sprintf(" that exited %d (run alone)", e.Exit)
	case EvidenceFile:
		return fmt.Sprintf("a file matching `%s` to be written", e.Pattern)
	}
	return fmt.Sprintf("a call of a tool matching `%s`", e.Pattern)
}

// An EvidenceError is a phase that may not end yet: the evidence it lacks.
type EvidenceError struct {
	Phase   string
	Missing []Evidence
	msg     string
}

func (e *EvidenceError) Error() string { return e.msg }
