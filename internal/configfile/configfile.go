package configfile

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3"
	"go.yaml.in/yaml/v3"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/yamlerr"
	"github.com/agent-worker/agent-worker/internal/yamlnode"
	"github.com/agent-worker/agent-worker/workflow"
)

// Parser is an ff.ConfigFileParser for the flags of fs. fileFlag is the
// flag that names the file (ff sets it from the command line or the
// environment before it reads the file), for the FILE of each message.
// Keys of nested maps join with "." and a list sets a repeatable flag once
// per item, as ffyaml.Parser does. The error is an api.Error of code
// invalid (exit 2) listing every problem.
func Parser(fs *flag.FlagSet, fileFlag string) ff.ConfigFileParser {
	return func(r io.Reader, set func(name, value string) error) error {
		file := "config file"
		if f := fs.Lookup(fileFlag); f != nil && f.Value.String() != "" {
			file = f.Value.String()
		}
		content, err := io.ReadAll(r)
		if err != nil {
			return api.Errorf(api.CodeInvalid, "read config file %s: %w", file, err)
		}
		c := &checker{fs: fs, set: set, file: file, seen: map[string]int{}}
		c.parse(content)
		return c.err()
	}
}

// checker collects the problems of one file.
type checker struct {
	fs    *flag.FlagSet
	set   func(name, value string) error
	file  string
	probs []string
	seen  map[string]int // flag name -> line of its key, for duplicates
}

func (c *checker) add(line int, format string, args ...any) {
	c.probs = append(c.probs, fmt.Sprintf("%s:%d: ", c.file, line)+fmt.Sprintf(format, args...))
}

func (c *checker) err() error {
	switch len(c.probs) {
	case 0:
		return nil
	case 1:
		return api.Errorf(api.CodeInvalid, "%s", c.probs[0])
	}
	return api.Errorf(api.CodeInvalid, "%s has %d problems:\n%s", c.file, len(c.probs), strings.Join(c.probs, "\n"))
}

const example = "max-concurrent: 4"

func (c *checker) parse(content []byte) {
	var doc yaml.Node
	if err := yaml.Unmarshal(content, &doc); err != nil {
		syn := yamlerr.Syntax(err, content)
		c.add(max(syn.Line, 1), "invalid YAML: %s", syn.Msg)
		return
	}
	if len(doc.Content) == 0 {
		return // an empty file sets nothing
	}
	root := yamlnode.Deref(doc.Content[0])
	switch {
	case yamlnode.IsNull(root):
		return
	case root.Kind != yaml.MappingNode:
		c.add(root.Line, "a config file is a map of %s flag names (without their dashes) to values, e.g. %s", c.fs.Name(), example)
		return
	}
	c.mapping("", root)
}

// mapping sets every key of n, prefixed by the keys of the maps holding it.
func (c *checker) mapping(prefix string, n *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], yamlnode.Deref(n.Content[i+1])
		name := k.Value
		if prefix != "" {
			name = prefix + "." + name
		}
		f := c.fs.Lookup(name)
		switch first, dup := c.seen[name]; {
		case f == nil && v.Kind == yaml.MappingNode:
			c.mapping(name, v)
			continue
		case f == nil:
			c.unknown(k, name)
			continue
		case dup:
			c.add(k.Line, "duplicate key %q (first at line %d): remove one", name, first)
			continue
		case v.Kind == yaml.MappingNode:
			c.add(v.Line, "%s takes a value, not a map: write it as on the command line, e.g. %s: VALUE", name, name)
			continue
		}
		c.seen[name] = k.Line
		items := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			items = v.Content
		}
		for _, item := range items {
			item = yamlnode.Deref(item)
			if item.Kind != yaml.ScalarNode {
				c.add(item.Line, "%s: each item of its list is a value, as on the command line", name)
				continue
			}
			value := item.Value
			if yamlnode.IsNull(item) {
				value = ""
			}
			if err := c.set(name, value); err != nil {
				c.add(item.Line, "%s: invalid value %q: %s", name, value, want(f, err))
			}
		}
	}
}

// unknown reports key k, with the flag it most likely meant.
func (c *checker) unknown(k *yaml.Node, name string) {
	var names []string
	c.fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if best := workflow.Closest(name, names); best != "" {
		c.add(k.Line, "unknown key %q: did you mean %q?", name, best)
		return
	}
	c.add(k.Line, "unknown key %q: the keys are the flags of `agent-worker %s --help` without their dashes", name, c.fs.Name())
}

// want says what f takes, for its standard types; other flags' own errors
// say it themselves. err is ff's "error setting flag", which wraps the
// flag's.
func want(f *flag.Flag, err error) string {
	if inner := errors.Unwrap(err); inner != nil {
		err = inner
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return err.Error()
	}
	switch g.Get().(type) {
	case bool:
		return "want true or false"
	case int, int64, uint, uint64:
		return "want a whole number, e.g. " + f.Name + ": 4"
	case float64:
		return "want a number"
	case time.Duration:
		return "want a duration such as 30s, 5m or 1h30m"
	}
	return err.Error()
}
