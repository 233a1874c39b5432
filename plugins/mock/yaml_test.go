package mock

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
)

// Everything the hand-written parser that came before yaml.v3 read comes
// out as the same values.
func TestDecodeYAML(t *testing.T) {
	t.Parallel()
	type m = map[string]any
	type l = []any
	tests := map[string]struct {
		src  string
		want any
	}{
		"empty":              {"", nil},
		"only a comment":     {"# nothing yet\n", nil},
		"comments and start": {"# hi\n---\n- a # trailing\n", l{"a"}},
		"scalars": {
			"- 3\n- -1.5\n- true\n- ~\n- 500ms\n- \"q: #x\\n\"\n- 'it''s'\n- don't # c\n- http://x:1/a#b\n",
			l{3, -1.5, true, nil, "500ms", "q: #x\n", "it's", "don't", "http://x:1/a#b"},
		},
		"steps": {
			"- reply: hi\n  to: bob\n- sleep: 1s\n  when:\n    attempt: 2\n",
			l{m{"reply": "hi", "to": "bob"}, m{"sleep": "1s", "when": m{"attempt": 2}}},
		},
		"flow": {
			`- tool: x` + "\n" + `  args: {content: "a, b", n: [1, 2.5, {k: v}], empty: {}, url: http://h:1}` + "\n",
			l{m{"tool": "x", "args": m{"content": "a, b", "n": l{1, 2.5, m{"k": "v"}}, "empty": m{}, "url": "http://h:1"}}},
		},
		"sequence under a key at the same indent": {"script:\n- a\n- b\nafter: 1\n", m{"script": l{"a", "b"}, "after": 1}},
		"nested sequences and item blocks": {
			"-\n  a: 1\n- - x\n  - y\n- []\n",
			l{m{"a": 1}, l{"x", "y"}, l{}},
		},
		"literal block": {
			"- reply: |\n    line one\n      indented # not a comment\n\n    line three\n\n- next\n",
			l{m{"reply": "line one\n  indented # not a comment\n\nline three\n"}, "next"},
		},
		"chomping and folding": {
			"a: |-\n  x\n  y\nb: >\n  one\n  two\n\n  three\nc: |+\n  k\n\nd: end\n",
			m{"a": "x\ny", "b": "one two\nthree\n", "c": "k\n\n", "d": "end"},
		},
		"quoted keys":            {`"a b": 1` + "\n'c': 2\n", m{"a b": 1, "c": 2}},
		"null value":             {"a:\nb: 2\n", m{"a": nil, "b": 2}},
		"keys that are not text": {"args: {1: one, true: yes}\n", m{"args": m{"1": "one", "true": "yes"}}},
		"document end":           {"- a\n...\n", l{"a"}},
	}
	for name, tc := range tests {
		_, got, err := decodeYAML("s.yaml", []byte(tc.src))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// A YAML script's errors name the file and the line to fix: of the syntax
// error, or of the step's key the step check refuses.
func TestYAMLScriptErrorLines(t *testing.T) {
	t.Parallel()
	const head = "# a reviewer\n- reply: |\n    looked at it\n    all good\n\n" // lines 1-5; step 1
	tests := map[string]struct{ src, want string }{
		"unknown key":        {head + "- tool: team_doc_append\n  args: {content: x}\n  to: bob\n", `s.yaml:8: script step 2: "to" goes only with "reply", not "tool"`},
		"misspelt key":       {head + "- reply: hi\n  repy: x\n", `s.yaml:7: script step 2: unknown key "repy"`},
		"bad value":          {head + "- sleep: soon\n", `s.yaml:6: script step 2: sleep: "soon": want a duration`},
		"nested bad value":   {head + "- text: x\n  when:\n    attempt: 0\n", `s.yaml:7: script step 2: when: attempt: want 1 or more`},
		"two actions":        {head + "- reply: a\n  text: b\n", `s.yaml:7: script step 2: both "reply" and "text"`},
		"no action":          {head + "- result: ok\n-\n  to: bob\n", `s.yaml:8: script step 3: no action`},
		"step not a mapping": {head + "- reply\n", `s.yaml:6: script step 2: want a step such as {"reply": "hi"}, not "reply"`},
		"not a list":         {"\n\nreply: hi\n", `s.yaml:3: script: want a list of steps`},
		"tab":                {"- a\n\t- b\n", "s.yaml:2: invalid YAML: found a tab character"},
		"open flow":          {"- reply: a\n- tool: x\n  args: {a: 1,\n", "s.yaml:4: invalid YAML: did not find expected node content"}, // the end of the file,
		"open quote":         {"- reply: a\n- reply: \"abc\n", "s.yaml:2: invalid YAML: found unexpected end of stream"},
		"duplicate key":      {"- reply: a\n  to: bob\n  to: carol\n", `s.yaml:3: invalid YAML: mapping key "to" already defined at line 2`},
		"bad indentation":    {"- reply: a\n  to: bob\n   x: 2\n", "s.yaml:3: invalid YAML: mapping values are not allowed"},
		"not a mapping item": {"- reply: a\n  to: bob\n just text\n", "s.yaml:3: invalid YAML:"},
		"trailing junk":      {"- a\nb: 1\n", `s.yaml:2: invalid YAML: did not find expected '-' indicator`},
		"first line":         {"a: b: c\n", "s.yaml:1: invalid YAML: mapping values are not allowed"},
		"unknown alias":      {"- reply: a\n- reply: *greeting\n", "s.yaml:2: invalid YAML: unknown anchor 'greeting' referenced"},
		"second document":    {"- reply: a\n---\n- reply: b\n", "s.yaml:2: a second YAML document"},
		"infinity":           {head + "- usage:\n    cost: .inf\n", "s.yaml:7: json: unsupported value: +Inf (quote it"},
		"bad escape":         {"- reply: a\n\n- reply: \"a\\qb\"\n", "s.yaml:3: invalid YAML: found unknown escape character"},
	}
	for name, tc := range tests {
		_, err := parseYAMLScript("s.yaml", []byte(tc.src))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to begin with %q", name, err, tc.want)
		}
	}
}

// Through the backend: the run ends with a permanent error that names the
// script file and the line, and nothing reaches the daemon.
func TestScriptFileErrorNamesTheLine(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	req := d.Request("alice")
	src := "# steps\n- reply: hi\n\n- sleep: soon\n- result: done\n"
	if err := os.WriteFile(filepath.Join(req.ProjectDir, "mock.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	req.Agent.Config = json.RawMessage(`{"script_file": "mock.yaml"}`)
	_, err := runMock(t, New(), req)
	const want = `mock: script_file mock.yaml:4: script step 2: sleep: "soon": want a duration such as "500ms" or "2s"`
	if err == nil || err.Error() != want || !backend.IsPermanent(err) {
		t.Errorf("err = %v, want a permanent error %q", err, want)
	}
	if calls := d.Calls(); len(calls) != 0 {
		t.Errorf("a bad script still reached the daemon: %v", calls)
	}
}

// A script file that is not a regular file (a FIFO, whose open would
// block until a writer comes) fails the run at once (issue 27).
func TestScriptFileMustBeAFile(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	req := d.Request("alice")
	if err := syscall.Mkfifo(filepath.Join(req.ProjectDir, "mock.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	req.Agent.Config = json.RawMessage(`{"script_file": "mock.yaml"}`)
	_, err := runMock(t, New(), req)
	if err == nil || !strings.Contains(err.Error(), "is not a regular file") || !backend.IsPermanent(err) {
		t.Errorf("err = %v, want a permanent error saying the script is not a regular file", err)
	}
}
