package yamlnode_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/agent-worker/agent-worker/internal/yamlnode"
)

// root parses src and returns its top node, aliases followed.
func root(t *testing.T, src string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	return yamlnode.Deref(doc.Content[0])
}

func TestEntries(t *testing.T) {
	t.Parallel()
	type pair struct{ Key, Value string }
	tests := map[string]struct {
		src       string
		off       int
		wantPairs []pair
		wantProbs []string
	}{
		"pairs in file order": {
			src:       "b: 1\na: 2\n",
			wantPairs: []pair{{"b", "1"}, {"a", "2"}},
		},
		"an alias value is followed": {
			src:       "a: &x 1\nb: *x\n",
			wantPairs: []pair{{"a", "1"}, {"b", "1"}},
		},
		"a duplicate key is reported at the second, naming the first": {
			src:       "a: 1\nb: 2\na: 3\n",
			wantPairs: []pair{{"a", "1"}, {"b", "2"}},
			wantProbs: []string{`3:1: duplicate key "a" in agents (first at line 1): remove one`},
		},
		"the first line is a line of the file after off lines": {
			src:       "a: 1\na: 3\n",
			off:       1,
			wantPairs: []pair{{"a", "1"}},
			wantProbs: []string{`2:1: duplicate key "a" in agents (first at line 2): remove one`},
		},
		"a merge key is refused": {
			src:       "base: &b {x: 1}\n<<: *b\n",
			wantPairs: []pair{{"base", ""}},
			wantProbs: []string{"2:1: keys in agents must be plain names (merge keys << are not supported): write each setting out"},
		},
		"a key that is not a scalar is refused": {
			src:       "? [a, b]\n: 1\nc: 2\n",
			wantPairs: []pair{{"c", "2"}},
			wantProbs: []string{"1:3: keys in agents must be plain names (merge keys << are not supported): write each setting out"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var probs []string
			report := func(n *yaml.Node, format string, args ...any) {
				probs = append(probs, fmt.Sprintf("%d:%d: ", n.Line, n.Column)+fmt.Sprintf(format, args...))
			}
			var pairs []pair
			for _, e := range yamlnode.Entries(root(t, tc.src), "in agents", tc.off, report) {
				if e.K.Value != e.Key {
					t.Errorf("entry %q has key node %q", e.Key, e.K.Value)
				}
				pairs = append(pairs, pair{e.Key, e.V.Value})
			}
			if diff := cmp.Diff(tc.wantPairs, pairs); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProbs, probs); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsNull(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		src  string
		want bool
	}{
		"null":        {"a: null", true},
		"tilde":       {"a: ~", true},
		"nothing":     {"a:", true},
		"empty text":  {`a: ""`, false},
		"quoted null": {`a: "null"`, false},
		"zero":        {"a: 0", false},
		"empty list":  {"a: []", false},
		"empty map":   {"a: {}", false},
		"alias":       {"x: &n ~\na: *n", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n := root(t, tc.src)
			v := yamlnode.Deref(n.Content[len(n.Content)-1])
			if got := yamlnode.IsNull(v); got != tc.want {
				t.Errorf("IsNull(%q) = %v, want %v", tc.src, got, tc.want)
			}
		})
	}
	if !yamlnode.IsNull(nil) {
		t.Error("IsNull(nil) = false: an absent key must read as null")
	}
}

func TestDerefFollowsAnAlias(t *testing.T) {
	t.Parallel()
	n := root(t, "a: &x [1]\nb: *x\n")
	got := yamlnode.Deref(n.Content[3])
	if got.Kind != yaml.SequenceNode || got.Line != 1 {
		t.Errorf("Deref(b) = kind %v at line %d, want the list of a at line 1", got.Kind, got.Line)
	}
	if yamlnode.Deref(nil) != nil {
		t.Error("Deref(nil) is not nil")
	}
}
