package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agent-worker/agent-worker/internal/yamlerr"
	"github.com/agent-worker/agent-worker/internal/yamlnode"
)

// parseYAMLScript reads a YAML script file with go.yaml.in/yaml/v3, the
// library the daemon reads workflow files (and so inline scripts) with.
// Its values go
// through the same step checks as a JSON script (by way of encoding/json),
// and every error starts with name:line: of the YAML syntax error, or of
// the step and key the step checks refuse.
func parseYAMLScript(name string, src []byte) ([]step, error) {
	root, v, err := decodeYAML(name, src)
	if err != nil || root == nil {
		return nil, err // root is nil for a file without a document: an empty script, as [] in JSON
	}
	raw, err := json.Marshal(v)
	if err != nil { // only a float JSON has no number for: .inf or .nan
		line, _ := nonFinite(root)
		return nil, fmt.Errorf("%s:%d: %w (quote it if it is meant as text)", name, max(line, 1), err)
	}
	steps, err := parseSteps(raw)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, scriptLine(root, err), err)
	}
	return steps, nil
}

// decodeYAML reads the one document of src: its top node (nil if there is
// none) and its value as encoding/json would decode the same in JSON.
func decodeYAML(name string, src []byte) (*yaml.Node, any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, yamlError(name, src, err, true)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, nil, fmt.Errorf("%s:%d: a second YAML document: a script file holds one list of steps", name, max(next.Line, 1))
	} else if !errors.Is(err, io.EOF) {
		return nil, nil, yamlError(name, src, err, true)
	}
	var v any
	if err := doc.Decode(&v); err != nil {
		return nil, nil, yamlError(name, src, err, false)
	}
	root := &doc
	if len(doc.Content) == 1 {
		root = yamlnode.Deref(doc.Content[0])
	}
	return root, textKeys(v), nil
}

// scriptLine is the line err is about: the key or step a step error names,
// else the start of the script.
func scriptLine(root *yaml.Node, err error) int {
	line := max(root.Line, 1)
	var se *stepError
	if !errors.As(err, &se) || root.Kind != yaml.SequenceNode || se.step > len(root.Content) {
		return line
	}
	n := yamlnode.Deref(root.Content[se.step-1])
	if n.Kind == yaml.MappingNode && se.key != "" {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Value == se.key {
				return k.Line
			}
		}
	}
	return n.Line
}

// nonFinite finds the first .inf or .nan under n (aliases are decoded
// where their anchor is) and returns its line.
func nonFinite(n *yaml.Node) (int, bool) {
	var f float64
	if n.Kind == yaml.ScalarNode && n.Tag == "!!float" && n.Decode(&f) == nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return n.Line, true
	}
	for _, c := range n.Content {
		if line, ok := nonFinite(c); ok {
			return line, true
		}
	}
	return 0, false
}

// textKeys gives every map text keys, as JSON needs: yaml.v3 decodes a
// map with a key such as 1 or true into map[any]any.
func textKeys(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = textKeys(x)
		}
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[fmt.Sprint(k)] = textKeys(x)
		}
		return out
	case []any:
		for i, x := range v {
			v[i] = textKeys(x)
		}
	}
	return v
}

// yamlError turns a YAML error into "name:line: invalid YAML: problem",
// one per problem, placed by internal/yamlerr (the one reader of yaml's
// error text). parsing says err is from reading the text rather than
// decoding it.
func yamlError(name string, src []byte, err error, parsing bool) error {
	probs := yamlerr.Decode(err)
	if parsing {
		probs = []yamlerr.Problem{yamlerr.Syntax(err, src)}
	}
	out := make([]string, len(probs))
	for i, p := range probs {
		out[i] = fmt.Sprintf("%s: invalid YAML: %s", name, p.Msg)
		if p.Line > 0 {
			out[i] = fmt.Sprintf("%s:%d: invalid YAML: %s", name, p.Line, p.Msg)
		}
	}
	return errors.New(strings.Join(out, "; "))
}
