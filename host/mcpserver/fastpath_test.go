package mcpserver

import (
	"context"
	"encoding/json"
	"testing"
)

// The fast path takes only a plain tools/call; anything else, down to a
// key in another case (which the SDK's decoder does not match), is the
// SDK's to answer or refuse.
func TestParseFastRequest(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"channel_read","arguments":{"limit":5}}}`: true,
		`{"jsonrpc":"2.0","id":"a-7","method":"tools/call","params":{"name":"channel_read"}}`:                     true,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{},"_meta":{}}}`:          false,
		`{"jsonrpc":"2.0","id":3,"Method":"tools/call","params":{"name":"x","arguments":{}}}`:                     false,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`:                                              false,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}`:                                 false,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}`:                                           false,
		`{"jsonrpc":"1.0","id":3,"method":"tools/call","params":{"name":"x"}}`:                                    false,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":7}}`:                                      false,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call"}`:                                                          false,
		`[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}]`:                                  false,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"},"extra":1}`:                          false,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}`:                                     false,
	} {
		if _, got := parseFastRequest([]byte(body)); got != want {
			t.Errorf("parseFastRequest(%s) = %v, want %v", body, got, want)
		}
	}
}

// notifications/cancelled ends the fast call of its session and id (a
// number by its value, alone or in a batch) and no other; the end of a
// session ends all of its calls.
func TestFastCallsCancelled(t *testing.T) {
	t.Parallel()
	var f fastSessions
	ctx := context.Background()
	seven, done7 := f.begin(ctx, "s1", json.RawMessage(`7`))
	defer done7()
	named, doneA := f.begin(ctx, "s1", json.RawMessage(`"a"`))
	defer doneA()
	other, doneO := f.begin(ctx, "s2", json.RawMessage(`7`))
	defer doneO()

	f.cancelNotified("s1", []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7.0}}`))
	if seven.Err() == nil {
		t.Error("call 7 of s1 goes on after its cancellation")
	}
	if named.Err() != nil || other.Err() != nil {
		t.Error("a cancellation of call 7 of s1 ended another call")
	}
	f.cancelNotified("s2", []byte(`[{"jsonrpc":"2.0","method":"notifications/progress","params":{"requestId":7}}]`))
	if other.Err() != nil {
		t.Error("a notification that is not a cancellation ended a call")
	}
	f.cancelNotified("s2", []byte(`[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}]`))
	if other.Err() == nil {
		t.Error("a cancellation in a batch did not end its call")
	}
	f.endSession("s1")
	if named.Err() == nil {
		t.Error("call a goes on after its session ended")
	}
}
