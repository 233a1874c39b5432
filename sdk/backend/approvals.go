package backend

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// DefaultApprovalTimeout is how long a gated action waits for approve or
// deny when the policy names no timeout.
const DefaultApprovalTimeout = 30 * time.Minute

// ApprovalPolicy is an agent's `approvals:` (with `approval_timeout:`):
// the actions that wait for a person's approval before they run.
type ApprovalPolicy struct {
	// Integrate gates worktree_integrate, Spawn gates agent_spawn.
	Integrate bool `json:"integrate,omitempty"`
	Spawn     bool `json:"spawn,omitempty"`
	// Shell are glob patterns (* matches anything, ? one character)
	// matched against the whole command of the sdk backend's run_shell.
	Shell []string `json:"shell,omitempty"`
	// Tools are daemon MCP tools gated by name.
	Tools []string `json:"tools,omitempty"`
	// Timeout is how long a gated action waits, e.g. "30m"; "" is
	// DefaultApprovalTimeout.
	Timeout string `json:"timeout,omitempty"`
}

// Daemon tools the policy's flags gate.
const (
	toolIntegrate = "worktree_integrate"
	toolSpawn     = "agent_spawn"
)

// Gates reports whether the daemon tool needs approval under p (nil gates
// nothing).
func (p *ApprovalPolicy) Gates(tool string) bool {
	if p == nil {
		return false
	}
	switch {
	case tool == toolIntegrate && p.Integrate, tool == toolSpawn && p.Spawn:
		return true
	}
	for _, t := range p.Tools {
		if t == tool {
			return true
		}
	}
	return false
}

// GatesShell returns the first pattern of p that the command matches
// (leading and trailing space ignored), or "".
func (p *ApprovalPolicy) GatesShell(command string) string {
	if p == nil {
		return ""
	}
	command = strings.TrimSpace(command)
	for _, pat := range p.Shell {
		if globRE(pat).MatchString(command) {
			return pat
		}
	}
	return ""
}

// TimeoutOr is the policy's timeout, or def when it names none.
func (p *ApprovalPolicy) TimeoutOr(def time.Duration) time.Duration {
	if p == nil || p.Timeout == "" {
		return def
	}
	d, err := time.ParseDuration(p.Timeout)
	if err != nil || d <= 0 {
		return def
	}
	return d
}

// WaitLimit is how long a gated action of p waits for a decision: its
// timeout, or DefaultApprovalTimeout.
func (p *ApprovalPolicy) WaitLimit() time.Duration { return p.TimeoutOr(DefaultApprovalTimeout) }

// globRE turns a shell pattern into an anchored regexp: * is any run of
// characters (spaces and slashes too), ? is one, the rest is literal.
func globRE(pat string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range strings.TrimSpace(pat) {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// validate checks the patterns, tool names and timeout.
func (p *ApprovalPolicy) validate() error {
	for _, s := range p.Shell {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("config approvals: a shell pattern is empty: write e.g. \"git push*\"")
		}
	}
	for _, t := range p.Tools {
		if strings.TrimSpace(t) == "" {
			return fmt.Errorf("config approvals: a tool name is empty: write e.g. tools: [team_doc_write]")
		}
	}
	if p.Timeout != "" {
		if d, err := time.ParseDuration(p.Timeout); err != nil || d <= 0 {
			return fmt.Errorf("config approvals timeout %q is not a duration: write e.g. 30m", p.Timeout)
		}
	}
	return nil
}
