package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agent-worker/agent-worker/sdk/tools"
)

// argType is one tool argument type as the fuzz target drives it: the
// schema the daemon advertises, that schema without its required names
// (to check the types of what was sent), and decodeArgs into a fresh value.
type argType struct {
	schema   *toolSchema
	types    *jsonschema.Resolved
	decode   func(raw json.RawMessage) (any, error)
	required []string
}

func argTypeOf[T any](tb testing.TB) argType {
	s := schemaFor[T]()
	loose := s.schema.CloneSchemas()
	loose.Required = nil
	types, err := loose.Resolve(nil)
	if err != nil {
		tb.Fatalf("resolve the schema of %T: %v", *new(T), err)
	}
	return argType{
		schema: s, types: types, required: s.required,
		decode: func(raw json.RawMessage) (any, error) {
			var in T
			err := decodeArgs(raw, s, &in)
			return in, err
		},
	}
}

// FuzzDecodeArgs decodes a tool call's arguments as the daemon's MCP server
// does before any handler runs, into every argument type of its tools
// (tool picks one). Arguments it accepts are a JSON object (or nothing)
// that names only the tool's arguments, each exactly as advertised, holds
// every required one, and whose values have the advertised types (null
// aside: it leaves a value unset); the decoded value, sent again, decodes
// the same. Anything else is refused with an error that says something.
func FuzzDecodeArgs(f *testing.F) {
	types := []argType{
		argTypeOf[tools.SendArgs](f), argTypeOf[tools.ReadArgs](f), argTypeOf[tools.NoArgs](f), argTypeOf[tools.AckArgs](f),
		argTypeOf[tools.StatusArgs](f), argTypeOf[tools.DocArgs](f), argTypeOf[tools.DocWriteArgs](f), argTypeOf[tools.DocCreateArgs](f),
		argTypeOf[tools.ProposalArgs](f), argTypeOf[tools.VoteArgs](f), argTypeOf[tools.ProposalRefArgs](f), argTypeOf[tools.CancelArgs](f),
		argTypeOf[tools.ResourceArgs](f), argTypeOf[tools.SpawnArgs](f), argTypeOf[tools.StopArgs](f), argTypeOf[tools.ResourceReadArgs](f),
		argTypeOf[tools.TaskCreateArgs](f), argTypeOf[tools.TaskListArgs](f), argTypeOf[tools.TaskClaimArgs](f), argTypeOf[tools.TaskProgressArgs](f),
		argTypeOf[tools.TaskCompleteArgs](f), argTypeOf[tools.TaskFailArgs](f), argTypeOf[tools.TaskRefArgs](f),
		argTypeOf[tools.WorktreeStatusArgs](f), argTypeOf[tools.WorktreeIntegrateArgs](f), argTypeOf[tools.WorktreeDiscardArgs](f), argTypeOf[tools.WorktreeQueueArgs](f),
	}
	for _, s := range []struct {
		tool byte
		args string
	}{
		{0, `{"message":"hi @bob","to":"bob"}`}, {0, `{}`}, {0, `null`}, {0, `{"message":"hi","extra":1}`}, {0, `{"message":42}`},
		{0, `["hi"]`}, {0, `{"Message":"case"}`}, {0, `{"message":null}`}, {1, `{"since_seq":3,"limit":200}`}, {1, `{"limit":1.5}`},
		{2, ``}, {2, `{"x":1}`}, {4, `{"state":null,"task":"t"}`}, {8, `{"type":"election","title":"t","options":["a","b"],"quorum":2,"binding":true,"expires_in":"1h"}`},
		{16, `{"title":"t","depends_on":["task-1"],"priority":-3}`}, {19, `{"id":"task-1","note":"n","percent":50}`}, {25, `{"agent":"a","reason":"r","force":true}`},
		{1, `{"since_seq":9223372036854775808}`}, {0, `{"message":"a","message":"b"}`}, {0, "{\"message\":\"\xff\"}"},
	} {
		f.Add(s.tool, []byte(s.args))
	}
	f.Fuzz(func(t *testing.T, tool byte, raw []byte) {
		at := types[int(tool)%len(types)]
		got, err := at.decode(raw)
		if err != nil {
			if err.Error() == "" {
				t.Errorf("%T: arguments %q refused with an empty error", got, raw)
			}
			return
		}
		obj := bytes.TrimSpace(raw)
		if len(obj) == 0 || string(obj) == "null" {
			obj = []byte("{}")
		}
		var fields map[string]any
		if err := json.Unmarshal(obj, &fields); err != nil || fields == nil {
			t.Fatalf("%T: accepted arguments %q that are not a JSON object (%v)", got, raw, err)
		}
		for _, name := range at.required {
			if _, ok := fields[name]; !ok {
				t.Errorf("%T: accepted arguments %q without the required %q", got, raw, name)
			}
		}
		for name, v := range fields {
			if v == nil {
				delete(fields, name)
			}
		}
		if err := at.types.Validate(fields); err != nil {
			t.Errorf("%T: accepted arguments %q the advertised schema refuses: %v", got, raw, err)
		}
		again, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("%T: marshal %+v: %v", got, got, err)
		}
		back, err := at.decode(again)
		if err != nil {
			t.Fatalf("%T: %q decodes to %+v, which sent again as %s is refused: %v", got, raw, got, again, err)
		}
		if d := cmp.Diff(got, back, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%T: %q decodes differently when sent again as %s (-first +again):\n%s", got, raw, again, d)
		}
	})
}
