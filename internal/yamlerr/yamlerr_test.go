package yamlerr

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// TestSyntax pins each kind of YAML syntax error to the line an editor
// shows for the mistake, or for an unclosed quote or bracket the line it
// opens on (yaml's own report).
func TestSyntax(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		src  string
		want Problem
	}{
		"tab in indentation": {"a:\n  b: 1\n\tc: 2\n",
			Problem{3, "found a tab character that violates indentation"}},
		"tab in a sequence": {"- a\n\t- b\n",
			Problem{2, "found a tab character that violates indentation"}},
		"tab after a scalar": {"a: 1\n\tb: 2\n", // yaml: line 1, the scalar's
			Problem{2, "found a tab character that violates indentation"}},
		"tab starting the file": {"# agents\n\ta: 1\n",
			Problem{2, "found character that cannot start any token"}},
		"bad indentation": {"a:\n  b: 1\n   c: 2\n",
			Problem{3, "mapping values are not allowed in this context"}},
		"key less indented": {"a:\n    b: 1\n  c: 2\n",
			Problem{3, "did not find expected key"}},
		"unclosed double quote": {"a: 1\nb: \"abc\nc: 3\n",
			Problem{2, "found unexpected end of stream"}},
		"unclosed single quote": {"a: 1\nb: 'abc\n",
			Problem{2, "found unexpected end of stream"}},
		"unclosed quote on line 1": {"a: \"abc\nb: 1\n", // yaml names no line 0: the end of the file instead
			Problem{3, "found unexpected end of stream"}},
		"unclosed flow sequence": {"a: 1\nb: [x, y\nc: 3\n",
			Problem{2, "did not find expected ',' or ']'"}},
		"unclosed flow mapping on line 1": {"{a: 1\n", // found at the end of the file
			Problem{2, "did not find expected ',' or '}'"}},
		"mapping after sequence": {"- a\nb: 1\n",
			Problem{2, "did not find expected '-' indicator"}},
		"two values on line 1": {"a: b: c\n", // yaml names no line 0
			Problem{1, "mapping values are not allowed in this context"}},
		"unknown alias": {"a: 1\nb: *nowhere\n",
			Problem{2, "unknown anchor 'nowhere' referenced"}},
		"bad escape": {"a: 1\n\nb: \"a\\qb\"\n",
			Problem{3, "found unknown escape character"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var n yaml.Node
			err := yaml.Unmarshal([]byte(tc.src), &n)
			if err == nil {
				t.Fatalf("yaml.Unmarshal(%q) = nil, want an error", tc.src)
			}
			if got := Syntax(err, []byte(tc.src)); got != tc.want {
				t.Errorf("Syntax(%q) = %+v, want %+v", err, got, tc.want)
			}
		})
	}
}

// TestDecode: each problem of a decode into Go values at its node's line.
func TestDecode(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		src  string
		into any
		want []Problem
	}{
		"duplicate key": {"a: 1\nb: 2\na: 3\n", &map[string]any{},
			[]Problem{{3, `mapping key "a" already defined at line 1`}}},
		"two type errors": {"a: x\nb: 2\nc: y\n", &map[string]int{},
			[]Problem{{1, "cannot unmarshal !!str `x` into int"}, {3, "cannot unmarshal !!str `y` into int"}}},
		"no node": {"a: !!binary '%%%'\n", &map[string][]byte{},
			[]Problem{{0, "!!binary value contains invalid base64 data"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tc.src), &n); err != nil {
				t.Fatal(err)
			}
			err := n.Decode(tc.into)
			if err == nil {
				t.Fatalf("Decode(%q) = nil, want an error", tc.src)
			}
			if diff := cmp.Diff(tc.want, Decode(err)); diff != "" {
				t.Errorf("Decode: %q (-want +got):\n%s", err, diff)
			}
		})
	}
}
