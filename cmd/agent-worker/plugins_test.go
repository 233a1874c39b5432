package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A status too long for its column keeps its head in the row and puts the
// rest, wrapped, on the lines below (issue 41, item 9).
func TestSplitStatus(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in, head, rest string
	}{
		"short":           {"ok", "ok", ""},
		"missing":         {"missing: npm install -g @anthropic-ai/claude-code@2.1.197", "missing", "npm install -g @anthropic-ai/claude-code@2.1.197"},
		"error":           {"error: installed but not executable: chmod +x /home/me/.agent-worker/plugins.d/agent-worker-backend-x", "error", "installed but not executable: chmod +x /home/me/.agent-worker/plugins.d/agent-worker-backend-x"},
		"version at":      {"claude 2.1.197 (Claude Code) at /home/me/.local/bin/claude", "claude 2.1.197 (Claude Code)", "at /home/me/.local/bin/claude"},
		"no place to cut": {strings.Repeat("x", 50), "see below", strings.Repeat("x", 50)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			head, rest := splitStatus(tt.in, statusWidth)
			if head != tt.head || rest != tt.rest {
				t.Errorf("splitStatus(%q) = %q, %q; want %q, %q", tt.in, head, rest, tt.head, tt.rest)
			}
		})
	}
}

func TestWrapWords(t *testing.T) {
	t.Parallel()
	long := "/" + strings.Repeat("p", 8)
	tests := map[string]struct {
		in   string
		want []string
	}{
		"empty":              {"", nil},
		"fits":               {"a b c", []string{"a b c"}},
		"breaks at spaces":   {"aaaa bbbb cccc", []string{"aaaa bbbb", "cccc"}},
		"too long cut at /":  {"/home/me/plugins.d/x", []string{"/home/me/", "plugins.d/", "x"}},
		"long word own line": {"chmod +x " + long, []string{"chmod +x", long}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, wrapWords(tt.in, 10)); diff != "" {
				t.Errorf("wrapWords (-want +got):\n%s", diff)
			}
		})
	}
}
