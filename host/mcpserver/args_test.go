package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/agent-worker/agent-worker/sdk/tools"
)

// decodeArgs says which argument is wrong and what to send instead.
func TestDecodeArgs(t *testing.T) {
	t.Parallel()
	send := schemaFor[tools.SendArgs]()
	for name, tc := range map[string]struct {
		args, err string
		want      tools.SendArgs
	}{
		"message":       {args: `{"message":"hi"}`, want: tools.SendArgs{Message: "hi"}},
		"dm":            {args: `{"message":"hi","to":"bob"}`, want: tools.SendArgs{Message: "hi", To: "bob"}},
		"missing":       {args: `{}`, err: `missing required argument "message"`},
		"null":          {args: `null`, err: `missing required argument "message"`},
		"unknown":       {args: `{"message":"hi","extra":1}`, err: `unknown argument "extra": this tool takes message, to`},
		"wrong type":    {args: `{"message":42}`, err: `argument "message" must be a string, not a JSON number`},
		"not an object": {args: `["hi"]`, err: `arguments must be a JSON object`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got tools.SendArgs
			err := decodeArgs(json.RawMessage(tc.args), send, &got)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Fatalf("err = %v, want %q", err, tc.err)
			case tc.err == "" && got != tc.want:
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	// A tool without arguments takes an empty object, or nothing.
	none := schemaFor[tools.NoArgs]()
	var in tools.NoArgs
	if err := decodeArgs(nil, none, &in); err != nil {
		t.Errorf("no arguments: %v", err)
	}
	if err := decodeArgs(json.RawMessage(`{"x":1}`), none, &in); err == nil || err.Error() != `unknown argument "x": this tool takes no arguments` {
		t.Errorf("an argument to a tool without any: %v", err)
	}
}
