package host

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// twoAgents makes alice and bob in workflow wf and returns their MCP
// configs.
func twoAgents(t *testing.T, th *testHost, wf string) (alice, bob api.MCPConfig) {
	t.Helper()
	ctx := context.Background()
	cfgs := map[string]api.MCPConfig{}
	for _, name := range []string{"alice", "bob"} {
		tg, err := api.ParseAgentTarget(name + "@" + wf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := th.client().CreateAgent(ctx, api.AgentSpec{Name: name, Workflow: wf, Tag: "main", Backend: "external"}); err != nil {
			t.Fatal(err)
		}
		if cfgs[name], err = th.client().MCPConfig(ctx, tg); err != nil {
			t.Fatal(err)
		}
	}
	return cfgs["alice"], cfgs["bob"]
}

// Another agent's token on a session it did not open is refused on every
// method, the fast path's tools/call included, by the SDK's own session
// check, and the owner's session goes on working.
func TestMCPSessionRefusesAnotherAgentOnEveryMethod(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	alice, bob := twoAgents(t, th, "own")
	sess := connectMCP(t, alice.URL, alice.Token, "alice")
	sid := sess.sess.ID()
	for name, tc := range map[string]struct{ method, body string }{
		"tools/list":            {"POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`},
		"tools/call":            {"POST", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"channel_send","arguments":{"message":"I am alice"}}}`},
		"tools/call with _meta": {"POST", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"channel_send","arguments":{"message":"I am alice"},"_meta":{}}}`},
		"ping":                  {"POST", `{"jsonrpc":"2.0","id":5,"method":"ping"}`},
		"GET stream":            {"GET", ""},
		"DELETE":                {"DELETE", ""},
	} {
		if code, body := testkit.MCPRequest(t, tc.method, bob.URL, bob.Token, sid, tc.body); code != http.StatusForbidden {
			t.Errorf("%s with bob's token on alice's session: %d %s, want 403", name, code, body)
		}
	}
	// Nothing bob sent took effect; alice's session still works.
	sess.ok("channel_send", map[string]any{"message": "still mine"})
	msgs, err := th.client().Peek(context.Background(), "@own", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Content == "I am alice" {
			t.Errorf("bob posted as %s through alice's session", m.From)
		}
	}
	if len(msgs) != 1 || msgs[0].From != "alice" {
		t.Errorf("channel after the attempts: %+v, want alice's one message", msgs)
	}
	// Another token of alice's own (each mcp-config mints one) may use it.
	tg, _ := api.ParseAgentTarget("alice@own")
	again, err := th.client().MCPConfig(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := testkit.MCPRequest(t, "POST", again.URL, again.Token, sid, `{"jsonrpc":"2.0","id":6,"method":"ping"}`); code != http.StatusOK {
		t.Errorf("alice's second token on her session: %d %s, want 200", code, body)
	}
}

// approvalCall starts approval_wait on alice's session over raw HTTP (the
// fast path answers it) and returns, once the question is pending, a
// channel that gets the time the answer came.
func approvalCall(t *testing.T, th *testHost, cfg api.MCPConfig, sid, id string) <-chan time.Time {
	t.Helper()
	done := make(chan time.Time, 1)
	go func() {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"approval_wait","arguments":{"action":"deploy ` + id + `"}}}`
		req, _ := http.NewRequest("POST", cfg.URL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", sid)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- time.Now()
	}()
	testkit.WaitFor(t, "approval "+id+" to be pending", func() bool {
		qs, err := th.client().Questions(context.Background(), nil, false)
		if err != nil {
			return false
		}
		for _, q := range qs {
			if q.Question == "deploy "+id {
				return true
			}
		}
		return false
	})
	return done
}

// questionState is the state of the approval asked for "deploy id".
func questionState(t *testing.T, th *testHost, id string) string {
	t.Helper()
	qs, err := th.client().Questions(context.Background(), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Question == "deploy "+id {
			return q.State
		}
	}
	return "missing"
}

// A call the fast path answers ends when the client cancels it
// (notifications/cancelled) or ends its session (DELETE), as a call the
// SDK answers does: approval_wait stops waiting at once and withdraws its
// question, instead of waiting out its 30 minutes. Another agent cannot
// cancel it.
func TestMCPFastCallCancelled(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	alice, bob := twoAgents(t, th, "cancel")
	sess := connectMCP(t, alice.URL, alice.Token, "alice")
	sid := sess.sess.ID()

	done := approvalCall(t, th, alice, sid, "41")
	cancelled := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"user pressed Esc"}}`
	if code, _ := testkit.MCPRequest(t, "POST", bob.URL, bob.Token, sid, cancelled); code != http.StatusForbidden {
		t.Errorf("bob's cancel of alice's call: %d, want 403", code)
	}
	sent := time.Now()
	if code, body := testkit.MCPRequest(t, "POST", alice.URL, alice.Token, sid, cancelled); code != http.StatusAccepted {
		t.Errorf("notifications/cancelled: %d %s, want 202", code, body)
	}
	select {
	case end := <-done:
		t.Logf("approval_wait ended %v after notifications/cancelled was sent", end.Sub(sent))
	case <-time.After(testkit.Deadline):
		t.Fatalf("approval_wait still waits %v after notifications/cancelled", testkit.Deadline)
	}
	if got := questionState(t, th, "41"); got != "cancelled" {
		t.Errorf("the cancelled call's question is %s, want cancelled", got)
	}
	sess.ok("team_members", nil) // the session survives a cancelled call

	done = approvalCall(t, th, alice, sid, "42")
	sent = time.Now()
	if code, body := testkit.MCPRequest(t, "DELETE", alice.URL, alice.Token, sid, ""); code != http.StatusNoContent {
		t.Errorf("DELETE of the session: %d %s, want 204", code, body)
	}
	select {
	case end := <-done:
		t.Logf("approval_wait ended %v after its session was deleted", end.Sub(sent))
	case <-time.After(testkit.Deadline):
		t.Fatalf("approval_wait still waits %v after its session was deleted", testkit.Deadline)
	}
	if got := questionState(t, th, "42"); got != "cancelled" {
		t.Errorf("the ended session's question is %s, want cancelled", got)
	}
}

// The token is checked before the body is read: a body without one is
// refused with 401 unread. With one, a body over what a tool call needs
// gets a JSON-RPC error, and the connection answers it.
func TestMCPBodyLimits(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	alice, _ := twoAgents(t, th, "big")
	sess := connectMCP(t, alice.URL, alice.Token, "alice")
	huge := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"resource_create","arguments":{"content":"` +
		strings.Repeat("x", 22<<20) + `"}}}`
	if code, _ := testkit.MCPRequest(t, "POST", alice.URL, "", sess.sess.ID(), huge); code != http.StatusUnauthorized {
		t.Errorf("22 MiB without a token: %d, want 401", code)
	}
	code, body := testkit.MCPRequest(t, "POST", alice.URL, alice.Token, sess.sess.ID(), huge)
	var rpc struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &rpc); err != nil || code != http.StatusRequestEntityTooLarge || rpc.Error.Code != -32600 ||
		!strings.Contains(rpc.Error.Message, "request body is over") {
		t.Errorf("22 MiB with a token: %d %.300s, want 413 with a JSON-RPC error", code, body)
	}
	// The largest resource the team takes (10 × 100,000 characters) still
	// goes through, though escaped as JSON (Go writes < as \u003c) it is
	// more than the SDK's own limit of 4 MiB.
	out, text, isErr := sess.call("resource_create", map[string]any{"content": strings.Repeat("<", 1_000_000)})
	if isErr || out["id"] == "" {
		t.Errorf("resource_create of a million characters: %v %q", out, text)
	}
}

// A page of another site gets 403 from /mcp and the API; the daemon's own
// address and requests without Origin pass.
func TestMCPForeignOriginRefused(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	alice, _ := twoAgents(t, th, "orig")
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for origin, want := range map[string]int{
		"https://evil.example": http.StatusForbidden,
		"null":                 http.StatusForbidden,
		"http://localhost:1":   http.StatusForbidden,
		th.Info().URL():        http.StatusOK,
		"":                     http.StatusOK,
	} {
		var extra []string
		if origin != "" {
			extra = []string{"Origin", origin}
		}
		if code, body := testkit.MCPRequest(t, "POST", alice.URL, alice.Token, "", initialize, extra...); code != want {
			t.Errorf("initialize with Origin %q: %d %s, want %d", origin, code, body, want)
		}
	}
	req, _ := http.NewRequest("POST", th.url("/send"), strings.NewReader(`{"target":"@orig","message":"hi"}`))
	req.Header.Set("Authorization", "Bearer "+th.Token())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /send from a foreign page: %d, want 403", resp.StatusCode)
	}
}

// The API takes JSON only as application/json: text/plain, which a web
// page may send anywhere without asking, and no type get 415.
func TestAPIRefusesJSONOfAnotherType(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	for ct, want := range map[string]int{
		"text/plain":                        http.StatusUnsupportedMediaType,
		"":                                  http.StatusUnsupportedMediaType,
		"application/x-www-form-urlencoded": http.StatusUnsupportedMediaType,
		"application/json; charset=utf-8":   http.StatusCreated,
	} {
		req, _ := http.NewRequest("POST", th.url("/send"), strings.NewReader(`{"target":"@global","message":"hi"}`))
		req.Header.Set("Authorization", "Bearer "+th.Token())
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e api.Error
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("POST /send as %q: %d, want %d", ct, resp.StatusCode, want)
		}
		if want == http.StatusUnsupportedMediaType && (e.Code != api.CodeMediaType || !strings.Contains(e.Message, "Content-Type: application/json")) {
			t.Errorf("POST /send as %q: error %+v, want one that names application/json", ct, e)
		}
	}
	msgs, err := th.client().Peek(context.Background(), "@global", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 {
		t.Errorf("%d messages posted, want only the application/json one", len(msgs))
	}
}
