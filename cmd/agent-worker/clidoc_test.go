package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/peterbourgon/ff/v3/ffcli"
)

// docs/cli.md is generated from the command tree; a command, flag or help
// text changed without `make docs` fails here, and so does CI.
func TestCLIDocIsCurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "docs", "cli.md")
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s (%v)", cliDocStale, err)
	}
	want := cliDoc(newRoot(&env{stdout: io.Discard, stderr: io.Discard}))
	if diff := cmp.Diff(want, string(have)); diff != "" {
		t.Errorf("%s; it differs from what the command tree generates (-want +docs/cli.md):\n%s", cliDocStale, diff)
	}
}

// Every command and subcommand has its section, reached from the table of
// contents.
func TestCLIDocHasEveryCommand(t *testing.T) {
	t.Parallel()
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard})
	doc := cliDoc(root)
	n := 0
	walkCommands(root, nil, func(path []string, c *ffcli.Command) {
		n++
		name := strings.Join(path, " ")
		if !strings.Contains(doc, "\n## agent-worker "+name+"\n") || !strings.Contains(doc, "(#"+anchor(path)+")") {
			t.Errorf("docs/cli.md has no section or contents entry for %q", name)
		}
		if !strings.Contains(doc, "```\n"+c.ShortUsage+"\n```") {
			t.Errorf("the section of %q does not show its usage %q", name, c.ShortUsage)
		}
	})
	if n < 40 {
		t.Errorf("walked %d commands, want every one of the tree's", n)
	}
}

func TestCLIDocMarkdown(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ help, want string }{
		"prose is escaped":    {"copy to <file>, a_b and *", "copy to &lt;file&gt;, a\\_b and \\*"},
		"code spans are kept": {"see `agent-worker <x> --help`", "see `agent-worker <x> --help`"},
		"indented is code":    {"install it:\n    a > b\n      c\nthen go", "install it:\n\n```\na > b\n  c\n```\n\nthen go"},
		"paragraphs":          {"one\n\ntwo\n", "one\n\ntwo"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := markdown(tc.help); got != tc.want {
				t.Errorf("markdown(%q) = %q, want %q", tc.help, got, tc.want)
			}
		})
	}
}
