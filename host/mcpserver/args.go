package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// toolSchema is what the daemon knows of one tool's argument or result type:
// the JSON schema it advertises in tools/list, and, for arguments, the names
// the check below accepts and requires. Built once per type and shared by
// every agent's server.
type toolSchema struct {
	schema   *jsonschema.Schema
	known    map[string]bool
	required []string
}

var schemas sync.Map // reflect.Type → *toolSchema

func schemaFor[T any]() *toolSchema {
	rt := reflect.TypeFor[T]()
	if s, ok := schemas.Load(rt); ok {
		return s.(*toolSchema)
	}
	sch, err := jsonschema.ForType(rt, &jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("tool schema of %v: %v", rt, err)) // a programming error, found by every test
	}
	s := &toolSchema{schema: sch, known: map[string]bool{}, required: sch.Required}
	for name := range sch.Properties {
		s.known[name] = true
	}
	actual, _ := schemas.LoadOrStore(rt, s)
	return actual.(*toolSchema)
}

// decodeArgs reads a tool call's arguments into in. It checks what the
// advertised schema promises (an object, no unknown names, the required
// names present, each value of its type) in one pass over the JSON, where
// validating against the schema would walk it again and allocate; the
// handlers check values themselves (empty, out of range). Errors name the
// argument and say what to send instead.
func decodeArgs(raw json.RawMessage, s *toolSchema, in any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return errors.New("arguments must be a JSON object")
	}
	for name := range fields {
		if !s.known[name] {
			return fmt.Errorf("unknown argument %q: this tool takes %s", name, argList(s))
		}
	}
	for _, name := range s.required {
		if _, ok := fields[name]; !ok {
			return fmt.Errorf("missing required argument %q", name)
		}
	}
	if err := json.Unmarshal(raw, in); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return fmt.Errorf("argument %q must be %s, not a JSON %s", typeErr.Field, jsonKind(typeErr.Type), typeErr.Value)
		}
		return fmt.Errorf("arguments: %v", err)
	}
	return nil
}

func argList(s *toolSchema) string {
	if len(s.known) == 0 {
		return "no arguments"
	}
	return strings.Join(slices.Sorted(maps.Keys(s.known)), ", ")
}

// jsonKind names a Go type the way a JSON caller thinks of it.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	default:
		return "an object"
	}
}
