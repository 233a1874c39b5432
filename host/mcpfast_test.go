package host

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// mcpPost is one raw MCP request of an SDK client on session sid: the
// status and body of the daemon's answer.
func mcpPost(t *testing.T, url, token, sid, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// The daemon answers an agent's tools/call without the SDK's machinery
// (mcpserver's fast path); an agent must not be able to tell: the same
// call answered by the SDK (a call with _meta goes to it) gives the same
// JSON, results and tool errors alike, and every request the fast path
// may not answer still gets the SDK's refusal.
func TestMCPFastPathAnswersAsTheSDK(t *testing.T) {
	th := startHost(t, t.TempDir())
	ctx := context.Background()
	c := th.client()
	cfgs := map[string]api.MCPConfig{}
	for _, name := range []string{"alice", "bob"} {
		tg, err := api.ParseAgentTarget(name + "@fast")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateAgent(ctx, api.AgentSpec{Name: name, Workflow: "fast", Tag: "main", Backend: "external"}); err != nil {
			t.Fatal(err)
		}
		if cfgs[name], err = c.MCPConfig(ctx, tg); err != nil {
			t.Fatal(err)
		}
	}
	alice, bob := cfgs["alice"], cfgs["bob"]
	sess := connectMCP(t, alice.URL, alice.Token, "alice")
	sid := sess.sess.ID()
	if _, err := c.Send(ctx, api.SendRequest{Target: "@fast", Message: "@alice the plan is in notes.md"}); err != nil {
		t.Fatal(err)
	}

	call := func(id int, tool, args, meta string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + meta + `}}`
	}
	for _, tc := range []struct{ tool, args string }{
		{"channel_read", `{"limit":5}`},
		{"channel_read", `null`},
		{"channel_send", `{}`},                     // a tool error: message is required
		{"channel_send", `{"message":"hi","x":1}`}, // a tool error: unknown argument
		{"team_doc_read", `{"name":"../../etc/passwd"}`},
	} {
		code1, fast := mcpPost(t, alice.URL, alice.Token, sid, call(1, tc.tool, tc.args, ""))
		code2, sdk := mcpPost(t, alice.URL, alice.Token, sid, call(1, tc.tool, tc.args, `,"_meta":{}`))
		if code1 != http.StatusOK || code2 != http.StatusOK {
			t.Fatalf("%s %s: status %d (fast) and %d (SDK)", tc.tool, tc.args, code1, code2)
		}
		var a, b any
		if err := json.Unmarshal([]byte(fast), &a); err != nil {
			t.Fatalf("%s: fast answer is not JSON: %v\n%s", tc.tool, err, fast)
		}
		if err := json.Unmarshal([]byte(sdk), &b); err != nil {
			t.Fatalf("%s: SDK answer is not JSON: %v\n%s", tc.tool, err, sdk)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s %s answered differently:\nfast: %s\nSDK:  %s", tc.tool, tc.args, fast, sdk)
		}
	}

	// bob's token on alice's session: refused as the SDK path refuses it.
	if code, got := mcpPost(t, bob.URL, bob.Token, sid, call(2, "channel_read", `{}`, "")); code != http.StatusForbidden {
		t.Errorf("bob's token on alice's session: %d %s, want 403", code, got)
	}
	// A session the daemon never opened, and no session at all.
	if code, got := mcpPost(t, alice.URL, alice.Token, "NOSUCHSESSION", call(3, "channel_read", `{}`, "")); code != http.StatusNotFound {
		t.Errorf("unknown session: %d %s, want 404", code, got)
	}
	// A closed session is forgotten by the fast path too.
	if err := sess.sess.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the closed session to be refused", func() bool {
		code, _ := mcpPost(t, alice.URL, alice.Token, sid, call(4, "channel_read", `{}`, ""))
		return code == http.StatusNotFound
	})
	// A dead token is refused before anything else.
	if code, got := mcpPost(t, alice.URL, "not-a-token", sid, call(5, "channel_read", `{}`, "")); code != http.StatusUnauthorized {
		t.Errorf("bad token: %d %s", code, got)
	}
}
