package mock

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseYAML(t *testing.T) {
	t.Parallel()
	type m = map[string]any
	type l = []any
	tests := map[string]struct {
		src  string
		want any
	}{
		"empty":              {"", nil},
		"comments and start": {"# hi\n---\n- a # trailing\n", l{"a"}},
		"scalars": {
			"- 3\n- -1.5\n- true\n- ~\n- 500ms\n- \"q: #x\\n\"\n- 'it''s'\n- don't # c\n- http://x:1/a#b\n",
			l{int64(3), -1.5, true, nil, "500ms", "q: #x\n", "it's", "don't", "http://x:1/a#b"},
		},
		"steps": {
			"- reply: hi\n  to: bob\n- sleep: 1s\n  when:\n    attempt: 2\n",
			l{m{"reply": "hi", "to": "bob"}, m{"sleep": "1s", "when": m{"attempt": int64(2)}}},
		},
		"flow": {
			`- tool: x` + "\n" + `  args: {content: "a, b", n: [1, 2.5, {k: v}], empty: {}, url: http://h:1}` + "\n",
			l{m{"tool": "x", "args": m{"content": "a, b", "n": l{int64(1), 2.5, m{"k": "v"}}, "empty": m{}, "url": "http://h:1"}}},
		},
		"sequence under a key at the same indent": {"script:\n- a\n- b\nafter: 1\n", m{"script": l{"a", "b"}, "after": int64(1)}},
		"nested sequences and item blocks": {
			"-\n  a: 1\n- - x\n  - y\n- []\n",
			l{m{"a": int64(1)}, l{"x", "y"}, l{}},
		},
		"literal block": {
			"- reply: |\n    line one\n      indented # not a comment\n\n    line three\n\n- next\n",
			l{m{"reply": "line one\n  indented # not a comment\n\nline three\n"}, "next"},
		},
		"chomping and folding": {
			"a: |-\n  x\n  y\nb: >\n  one\n  two\n\n  three\nc: |+\n  k\n\nd: end\n",
			m{"a": "x\ny", "b": "one two\nthree\n", "c": "k\n\n", "d": "end"},
		},
		"quoted keys": {`"a b": 1` + "\n'c': 2\n", m{"a b": int64(1), "c": int64(2)}},
		"null value":  {"a:\nb: 2\n", m{"a": nil, "b": int64(2)}},
	}
	for name, tc := range tests {
		got, err := parseYAML("s.yaml", []byte(tc.src))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

func TestParseYAMLErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ src, want string }{
		"tab":             {"- a\n\t- b\n", "s.yaml:2: indent with spaces"},
		"anchor":          {"- &x a\n", "s.yaml:1: anchors"},
		"open flow":       {"- {a: 1,\n  b: 2}\n", "s.yaml:1:"},
		"open quote":      {"- \"abc\n", "s.yaml:1: "},
		"duplicate key":   {"a: 1\na: 2\n", `s.yaml:2: key "a" appears twice`},
		"bad indentation": {"a: 1\n   b: 2\n", "s.yaml:2: unexpected indentation"},
		"not a mapping":   {"a: 1\njust text\n", `s.yaml:2: want key: value`},
		"trailing junk":   {"- a\nb: 1\n", `s.yaml:2: unexpected "b: 1"`},
		"block header":    {"a: |2\n  x\n", "s.yaml:1: block scalar header"},
	}
	for name, tc := range tests {
		_, err := parseYAML("s.yaml", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}
