package api

import (
	"strings"

	"github.com/agent-worker/agent-worker/workflow"
)

// Defaults for the parts a target leaves out.
const (
	GlobalWorkflow = "global"
	DefaultTag     = "main"
)

// Target names an agent (alice@review:pr-1) or a workflow:tag scope
// (@review:pr-1). Agent is empty for a scope.
type Target struct {
	Agent    string
	Workflow string
	Tag      string
}

// IsScope reports whether the target names a workflow:tag rather than an agent.
func (t Target) IsScope() bool { return t.Agent == "" }

// String is the full form, agent@workflow:tag or @workflow:tag; it parses
// back to the same target.
func (t Target) String() string { return t.Agent + "@" + t.Workflow + ":" + t.Tag }

// Display is the shortest form that parses back to the same target:
// defaults are left out (alice, alice@review, alice@global:pr-1).
func (t Target) Display() string {
	switch {
	case t.Tag != DefaultTag:
		return t.Agent + "@" + t.Workflow + ":" + t.Tag
	case t.Workflow != GlobalWorkflow || t.IsScope():
		return t.Agent + "@" + t.Workflow
	default:
		return t.Agent
	}
}

// ParseTarget reads the target syntax of SPEC.md. Unlike the anchor, it
// rejects empty parts (alice@, @, alice@review:), a second @ or : and names
// outside the allowed patterns, with an error that names the bad part.
func ParseTarget(s string) (Target, error) {
	if s == "" {
		return Target{}, Errorf(CodeInvalid, "empty target: give an agent (alice, alice@review:pr-1) or a workflow (@review:pr-1)")
	}
	if strings.Count(s, "@") > 1 {
		return Target{}, badTarget(s, "it has more than one '@' (write agent@workflow:tag)")
	}
	if strings.Count(s, ":") > 1 {
		return Target{}, badTarget(s, "it has more than one ':' (write agent@workflow:tag)")
	}
	t := Target{Workflow: GlobalWorkflow, Tag: DefaultTag}
	agent, scope, hasScope := strings.Cut(s, "@")
	t.Agent = agent
	if hasScope {
		wf, tag, hasTag := strings.Cut(scope, ":")
		if wf == "" {
			return Target{}, badTarget(s, "the workflow after '@' is missing")
		}
		t.Workflow = wf
		if hasTag {
			if tag == "" {
				return Target{}, badTarget(s, "the tag after ':' is missing")
			}
			t.Tag = tag
		}
	}
	if !hasScope && agent == "" {
		return Target{}, badTarget(s, "the agent name is missing")
	}
	if t.Agent != "" {
		if err := ValidateAgentName(t.Agent); err != nil {
			return Target{}, badTarget(s, err.Error())
		}
	}
	if err := ValidateScopeName("workflow", t.Workflow); err != nil {
		return Target{}, badTarget(s, err.Error())
	}
	if err := ValidateScopeName("tag", t.Tag); err != nil {
		return Target{}, badTarget(s, err.Error())
	}
	return t, nil
}

// ParseAgentTarget is ParseTarget for commands that need an agent.
func ParseAgentTarget(s string) (Target, error) {
	t, err := ParseTarget(s)
	if err == nil && t.IsScope() {
		return Target{}, badTarget(s, "it names a workflow, but this command needs an agent (alice or alice@"+t.Workflow+":"+t.Tag+")")
	}
	return t, err
}

// ParseScopeTarget is ParseTarget for what belongs to a workflow (its
// tasks, its proposals), not to one agent: what names it in the error.
func ParseScopeTarget(s, what string) (Target, error) {
	t, err := ParseTarget(s)
	if err == nil && !t.IsScope() {
		return Target{}, Errorf(CodeInvalid, "%s is an agent: %s belong to a workflow, give %s", s, what, Target{Workflow: t.Workflow, Tag: t.Tag}.Display())
	}
	return t, err
}

// ValidateAgentName checks an agent name against SPEC.md and the reserved
// names. The rule itself is the workflow file's, so an agent is named the
// same way in a file, a target and a request.
func ValidateAgentName(name string) error {
	if err := workflow.CheckAgentName(name); err != nil {
		return Errorf(CodeInvalid, "%v", err)
	}
	return nil
}

// ValidateScopeName checks a workflow or tag name; kind says which in the
// error.
func ValidateScopeName(kind, name string) error {
	if err := workflow.CheckScopeName(kind, name); err != nil {
		return Errorf(CodeInvalid, "%v", err)
	}
	return nil
}

func badTarget(s, why string) error {
	return Errorf(CodeInvalid, "bad target %s: %s", quote(s), why)
}

func quote(s string) string { return workflow.Quote(s) }
