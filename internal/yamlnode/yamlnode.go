package yamlnode

import "go.yaml.in/yaml/v3"

// Deref follows YAML aliases to the node they name; nil stays nil.
func Deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// IsNull says whether n is absent (nil) or an explicit null (null, ~ or
// nothing after the key), which every reader treats alike.
func IsNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// Report records a problem about node n; the caller gives it a file, a
// line and a column.
type Report func(n *yaml.Node, format string, args ...any)

// Entry is one pair of a mapping: its key's text, its key node (for the
// position of a problem about the key) and its value with aliases followed.
type Entry struct {
	Key  string
	K, V *yaml.Node
}

// Entries lists mapping n's pairs in file order. A key that is not a plain
// scalar (a merge key << among them) and a key seen before in n are
// reported, with where ("in agents") saying which mapping, and left out.
// off is the number of lines of the file before the document's first, so
// that a duplicate's "first at line" is a line of the file.
func Entries(n *yaml.Node, where string, off int, report Report) []Entry {
	var out []Entry
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], Deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			report(k, "keys %s must be plain names (merge keys << are not supported): write each setting out", where)
			continue
		}
		if line, dup := first[k.Value]; dup {
			report(k, "duplicate key %q %s (first at line %d): remove one", k.Value, where, line)
			continue
		}
		first[k.Value] = k.Line + off
		out = append(out, Entry{k.Value, k, v})
	}
	return out
}
