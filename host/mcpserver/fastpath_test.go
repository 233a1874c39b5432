package mcpserver

import "testing"

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
