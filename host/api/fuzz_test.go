package api

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agent-worker/agent-worker/workflow"
)

// maxTargetError bounds the error for any target, however long: a name is
// quoted cut to 80 characters, so a pasted megabyte is not echoed back.
const maxTargetError = 2048

// FuzzParseTarget checks the target parser every CLI command and API
// request uses. A target it accepts has valid parts and prints, in both of
// its forms, as a string that parses back to the same target; the input is
// one of the forms the syntax allows for it. Anything else is a usage error
// that says what is wrong, in bounded length.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"alice", "alice@review", "alice@review:pr-123", "@review", "@review:pr-123",
		"alice@global:pr-1", "code-reviewer@a.b_c", "test_runner@wf:v1.2", "A1@2024-review:3rd",
		"a@work@flow", "a@wf:tag:x", "alice@", "@", "alice@review:", "", "1alice", "all", "System@x",
		"alice@-wf", "alice@wf:.tag", "alice@w/f", "alice@../..", "alice:main", ":", "@:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTarget(s)
		if err != nil {
			if ErrorCode(err) != CodeInvalid {
				t.Errorf("ParseTarget(%q): code %q, want %q (%v)", s, ErrorCode(err), CodeInvalid, err)
			}
			if msg := err.Error(); msg == "" || len(msg) > maxTargetError {
				t.Errorf("ParseTarget(%q): error of %d bytes, want 1 to %d: %.300q", s, len(msg), maxTargetError, msg)
			}
			if _, aerr := ParseAgentTarget(s); aerr == nil {
				t.Errorf("ParseAgentTarget(%q) accepts what ParseTarget refuses", s)
			}
			if _, serr := ParseScopeTarget(s, "tasks"); serr == nil {
				t.Errorf("ParseScopeTarget(%q) accepts what ParseTarget refuses", s)
			}
			return
		}
		if !utf8.ValidString(s) || strings.ContainsAny(s, " \t\r\n/\\\x00") {
			t.Errorf("ParseTarget(%q) accepted a target with bytes no name may hold", s)
		}
		if got.Agent != "" && workflow.CheckAgentName(got.Agent) != nil {
			t.Errorf("ParseTarget(%q): agent %q is not a valid agent name", s, got.Agent)
		}
		if workflow.CheckScopeName("workflow", got.Workflow) != nil || workflow.CheckScopeName("tag", got.Tag) != nil {
			t.Errorf("ParseTarget(%q) = %+v: workflow or tag is not a valid name", s, got)
		}
		// The input is one of the spellings of the target: defaults may be
		// left out, nothing else.
		forms := []string{got.String()}
		if got.Tag == DefaultTag {
			forms = append(forms, got.Agent+"@"+got.Workflow)
			if got.Workflow == GlobalWorkflow && !got.IsScope() {
				forms = append(forms, got.Agent)
			}
		}
		if !slices.Contains(forms, s) {
			t.Errorf("ParseTarget(%q) = %+v, which is spelled %q, not as given", s, got, forms)
		}
		for _, form := range []string{got.String(), got.Display()} {
			again, err := ParseTarget(form)
			if err != nil || again != got {
				t.Errorf("ParseTarget(%q) = %+v, prints as %q, which parses to %+v, %v", s, got, form, again, err)
			}
		}
		if len(got.Display()) > len(got.String()) {
			t.Errorf("Display %q is longer than String %q", got.Display(), got.String())
		}
		// The agent- and scope-only parsers split the accepted targets.
		_, aerr := ParseAgentTarget(s)
		_, serr := ParseScopeTarget(s, "tasks")
		if (aerr == nil) == got.IsScope() || (serr == nil) != got.IsScope() {
			t.Errorf("target %q (scope %v): ParseAgentTarget %v, ParseScopeTarget %v", s, got.IsScope(), aerr, serr)
		}
		for _, e := range []error{aerr, serr} {
			if e != nil && ErrorCode(e) != CodeInvalid {
				t.Errorf("target %q: code %q, want %q (%v)", s, ErrorCode(e), CodeInvalid, e)
			}
		}
	})
}
