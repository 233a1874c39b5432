package team

import "strings"

// MentionAll addresses every member of a workflow:tag but the sender.
const MentionAll = "all"

// ParseMentions returns the members content mentions, de-duplicated in
// first-seen order, with @all expanded to every member except sender
// (SPEC.md "Mentions"). An @ counts only at the start or after a character
// that cannot be part of a name or address, so bob@example.com is not a
// mention; a name ends at the first character outside [A-Za-z0-9_-], and a
// trailing - or _ is punctuation, not part of it, unless a member's name
// ends so (a valid agent name may: @bob_ mentions bob_ when bob_ is one).
func ParseMentions(content string, members []string, sender string) []string {
	isMember := make(map[string]bool, len(members))
	for _, m := range members {
		isMember[m] = true
	}
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for i := 0; i < len(content); i++ {
		if content[i] != '@' || (i > 0 && !mentionBoundary(content[i-1])) {
			continue
		}
		j := i + 1
		for j < len(content) && isNameByte(content[j]) {
			j++
		}
		name := content[i+1 : j]
		if !isMember[name] {
			name = strings.TrimRight(name, "-_")
		}
		i = j - 1
		switch {
		case name == MentionAll:
			for _, m := range members {
				if m != sender {
					add(m)
				}
			}
		case isMember[name]:
			add(name)
		}
	}
	return out
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// mentionBoundary reports whether c may precede a mention's @. Bytes of
// multi-byte UTF-8 characters (>= 0x80) count as boundaries, like spaces.
func mentionBoundary(c byte) bool { return !isNameByte(c) && c != '.' && c != '@' }
