package workflow

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest agent, workflow or tag name. Names appear in
// targets, mentions, file paths and every log line, so they stay short.
const MaxNameLen = 64

var (
	agentNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)
	scopeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
)

// reservedAgents mean something else: @all in a channel, and the senders the
// daemon posts as. Any case, so that @System cannot pass for the daemon.
var reservedAgents = []string{"all", "system", "user"}

// CheckAgentName says what is wrong with an agent name, or returns nil. It
// is the one definition of an agent name: the workflow parser, the HTTP API
// and the CLI's targets all call it, so they can never disagree.
func CheckAgentName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("agent name is empty: use a letter, then up to %d letters, digits, _ or -", MaxNameLen-1)
	case utf8.RuneCountInString(name) > MaxNameLen:
		return fmt.Errorf("agent name %s is %d characters; at most %d", Quote(name), utf8.RuneCountInString(name), MaxNameLen)
	case !agentNameRE.MatchString(name):
		return fmt.Errorf("agent name %q is not valid: use a letter, then up to %d letters, digits, _ or -", name, MaxNameLen-1)
	case slices.ContainsFunc(reservedAgents, func(r string) bool { return strings.EqualFold(r, name) }):
		return fmt.Errorf("agent name %q is reserved: pick another name", name)
	}
	return nil
}

// CheckScopeName says what is wrong with a workflow or tag name (kind says
// which), or returns nil; like CheckAgentName, the one definition.
func CheckScopeName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s name is empty: use a letter or digit, then up to %d letters, digits, ., _ or -", kind, MaxNameLen-1)
	case utf8.RuneCountInString(name) > MaxNameLen:
		return fmt.Errorf("%s name %s is %d characters; at most %d", kind, Quote(name), utf8.RuneCountInString(name), MaxNameLen)
	case !scopeNameRE.MatchString(name):
		return fmt.Errorf("%s name %q is not valid: use a letter or digit, then up to %d letters, digits, ., _ or -", kind, name, MaxNameLen-1)
	}
	return nil
}

// Quote quotes s for a message, cutting one too long to print whole (a
// 10,000-character name would bury the message it is part of).
func Quote(s string) string {
	const n = 80
	if r := []rune(s); len(r) > n {
		return fmt.Sprintf("%q…", string(r[:n]))
	}
	return fmt.Sprintf("%q", s)
}
