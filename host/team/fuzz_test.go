package team

import (
	"slices"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// FuzzMentions checks ParseMentions, which decides whom a channel message
// wakes, against what a user expects of it (FuzzParseMentions beside the
// table test checks only that nobody is named twice). It mentions only
// members, each once, each written after an @ in the message, the sender
// only when named itself; a space before the message or text after it
// changes nothing already found; and every name an agent may have is
// mentioned by writing @name. name is a member added to the team when it
// is a valid agent name.
func FuzzMentions(f *testing.F) {
	f.Add("@reviewer please", "alice", "coder", " @tail")
	f.Add("@code-reviewer and @test_runner", "alice", "code-reviewer", "")
	f.Add("@all standup", "reviewer", "all", "@bob")
	f.Add("mail bob@example.com (@alice) v1.@bob @@coder", "bob", "coder", "@coder")
	f.Add("@alice-, look @bob_ hi", "bob", "bob_", "")
	f.Add("héé@alice \xff@bob", "bob", "x", "\x00@all")
	f.Fuzz(func(t *testing.T, content, sender, name, more string) {
		members := []string{"reviewer", "coder", "code-reviewer", "test_runner", "alice", "bob"}
		if api.ValidateAgentName(name) == nil && !slices.Contains(members, name) {
			members = append(members, name)
		}
		got := ParseMentions(content, members, sender)
		all := strings.Contains(content, "@"+MentionAll)
		seen := map[string]bool{}
		for _, m := range got {
			switch {
			case seen[m]:
				t.Errorf("ParseMentions(%q) = %q: %q twice", content, got, m)
			case !slices.Contains(members, m):
				t.Errorf("ParseMentions(%q) = %q: %q is not a member", content, got, m)
			case !strings.Contains(content, "@"+m) && !all:
				t.Errorf("ParseMentions(%q) = %q: %q is not written after an @, and there is no @all", content, got, m)
			case m == sender && !strings.Contains(content, "@"+m):
				t.Errorf("ParseMentions(%q, sender %q) = %q: @all woke its own sender", content, sender, got)
			}
			seen[m] = true
		}
		if !strings.Contains(content, "@") && len(got) > 0 {
			t.Errorf("ParseMentions(%q) = %q without any @", content, got)
		}
		if again := ParseMentions(" "+content, members, sender); !slices.Equal(again, got) {
			t.Errorf("a space before %q changes its mentions from %q to %q", content, got, again)
		}
		if longer := ParseMentions(content+" "+more, members, sender); len(longer) < len(got) || !slices.Equal(longer[:len(got)], got) {
			t.Errorf("%q mentions %q, but followed by %q it mentions %q", content, got, more, longer)
		}
		for _, m := range members {
			first := ParseMentions("@"+m+" "+content, members, sender)
			if len(first) == 0 || first[0] != m {
				t.Errorf("@%s before %q mentions %q: member %q cannot be mentioned", m, content, first, m)
			}
		}
	})
}

// An agent may be named with a trailing - or _ (FuzzMentions found that
// such an agent could not be mentioned at all): its exact name wins over
// reading the - or _ as punctuation.
func TestMentionNameEndingInPunctuation(t *testing.T) {
	t.Parallel()
	members := []string{"bob", "bob_", "carol-"}
	for content, want := range map[string][]string{
		"@bob_ hi":       {"bob_"},
		"@bob- hi":       {"bob"},
		"@carol-, look":  {"carol-"},
		"@carol_ @bob__": {"bob"},
	} {
		if got := ParseMentions(content, members, "x"); !slices.Equal(got, want) {
			t.Errorf("ParseMentions(%q) = %q, want %q", content, got, want)
		}
	}
}
