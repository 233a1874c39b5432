package team

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseMentions(t *testing.T) {
	t.Parallel()
	members := []string{"reviewer", "coder", "assistant", "code-reviewer", "test_runner", "alice", "bob"}
	tests := map[string]struct {
		content, sender string
		want            []string
	}{
		// The anchor's cases (reference §8).
		"single":           {"@reviewer please", "alice", []string{"reviewer"}},
		"two":              {"@reviewer and @coder", "alice", []string{"reviewer", "coder"}},
		"unknown dropped":  {"@unknown hi @coder", "alice", []string{"coder"}},
		"dedupe":           {"@reviewer @reviewer", "alice", []string{"reviewer"}},
		"none":             {"no mentions here", "alice", nil},
		"dash and under":   {"@code-reviewer and @test_runner", "alice", []string{"code-reviewer", "test_runner"}},
		"start middle end": {"@coder look, @assistant, then @reviewer", "alice", []string{"coder", "assistant", "reviewer"}},
		// Our rules (SPEC.md), stricter than the anchor.
		"email":               {"mail bob@example.com", "alice", nil},
		"after letter":        {"x@alice", "bob", nil},
		"after dot":           {"v1.@alice", "bob", nil},
		"after at":            {"@@alice", "bob", nil},
		"after paren":         {"(@alice)", "bob", []string{"alice"}},
		"trailing dash":       {"@alice-, look", "bob", []string{"alice"}},
		"trailing under":      {"@alice_ hi", "bob", []string{"alice"}},
		"ends at punct":       {"@alice: @bob! @coder.", "x", []string{"alice", "bob", "coder"}},
		"prefix not member":   {"@alicex", "bob", nil},
		"after unicode":       {"héé@alice", "bob", []string{"alice"}},
		"all":                 {"@all standup", "alice", []string{"reviewer", "coder", "assistant", "code-reviewer", "test_runner", "bob"}},
		"all then explicit":   {"@bob first, @all", "alice", []string{"bob", "reviewer", "coder", "assistant", "code-reviewer", "test_runner"}},
		"all excludes sender": {"@all", "reviewer", []string{"coder", "assistant", "code-reviewer", "test_runner", "alice", "bob"}},
		"self mention kept":   {"@alice note to self", "alice", []string{"alice"}},
		"bare at":             {"@ alice", "bob", nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := ParseMentions(tc.content, members, tc.sender)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseMentions(%q) (-want +got):\n%s", tc.content, diff)
			}
		})
	}
}

func FuzzParseMentions(f *testing.F) {
	for _, s := range []string{"@alice", "a@b @c-_", "@all @@x", "\xff@bob"} {
		f.Add(s)
	}
	members := []string{"alice", "bob", "c"}
	f.Fuzz(func(t *testing.T, s string) {
		got := ParseMentions(s, members, "alice")
		seen := map[string]bool{}
		for _, m := range got {
			if seen[m] {
				t.Fatalf("duplicate %q in %v", m, got)
			}
			seen[m] = true
		}
	})
}
