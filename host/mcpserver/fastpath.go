package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/store"
)

// The fast path answers the one request an agent sends over and over, a
// tools/call on a session it has initialized, without the SDK's
// per-request machinery: the SDK decodes every body several times (each
// decode allocating a 32 KB buffer), routes it through a goroutine per
// call and its middleware, and encodes the answer, which under eight busy
// clients cost a third of the daemon's CPU per channel_send. Everything
// else — initialize, notifications, tools/list, GET streams, DELETE, a
// batch, a call with _meta (progress) or any key a plain call has not, a
// protocol version it does not know, a tool it does not have — goes to
// the SDK untouched, and so does
// any request the SDK would refuse (bad headers, an unknown session), so
// that the SDK still writes every error. The call itself runs the very
// handler the SDK would run (see tool), with the same argument checks,
// and ends as the SDK's calls do: on a notifications/cancelled of its id
// and when its session is closed (DELETE), as well as when its client
// leaves.

// fastVersions are the protocol versions whose tools/call the fast path
// answers: the session-based ones. The newer stateless protocol carries
// its version in each request's _meta and is left to the SDK.
var fastVersions = map[string]bool{"2025-11-25": true, "2025-06-18": true, "2025-03-26": true}

// fastSessions are the SDK sessions that have been initialized, by id,
// with the identity that opened them, and the fast path's calls in flight
// on them; a session leaves, and its calls end, when the SDK closes it.
type fastSessions struct {
	m sync.Map // session id → store.AgentKey

	// mu guards calls: the cancel of each fast call in flight.
	mu    sync.Mutex
	calls map[fastCallID]*fastCallCancel
}

// fastCallCancel ends one fast call; a pointer, so that a call whose id
// a client reused while it ran removes only its own entry.
type fastCallCancel struct{ cancel context.CancelFunc }

// fastCallID names a call in flight: its session and request id.
type fastCallID struct{ session, request string }

// opened is the server's InitializedHandler for identity me.
func (f *fastSessions) opened(me store.AgentKey, ss *mcp.ServerSession) {
	id := ss.ID()
	if id == "" {
		return
	}
	f.m.Store(id, me)
	go func() {
		_ = ss.Wait() // returns when the session is closed; its error is the SDK's to log
		f.m.CompareAndDelete(id, me)
		f.endSession(id)
	}()
}

// owner is the identity that opened session id.
func (f *fastSessions) owner(id string) (store.AgentKey, bool) {
	v, ok := f.m.Load(id)
	if !ok {
		return store.AgentKey{}, false
	}
	return v.(store.AgentKey), true
}

// begin registers a fast call of session with request id; its context
// ends with parent, a notifications/cancelled of it, or the session's
// end. done releases it.
func (f *fastSessions) begin(parent context.Context, session string, id json.RawMessage) (ctx context.Context, done func()) {
	ctx, cancel := context.WithCancel(parent)
	key, c := fastCallID{session, requestKey(id)}, &fastCallCancel{cancel}
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[fastCallID]*fastCallCancel{}
	}
	f.calls[key] = c
	f.mu.Unlock()
	return ctx, func() {
		f.mu.Lock()
		if f.calls[key] == c {
			delete(f.calls, key)
		}
		f.mu.Unlock()
		cancel()
	}
}

// cancelNotified cancels the fast calls of session that body, a message
// or a batch of them, cancels with notifications/cancelled. The body goes
// on to the SDK, which cancels its own calls.
func (f *fastSessions) cancelNotified(session string, body []byte) {
	if !bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
		return
	}
	type note struct {
		Method string `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	var notes []note
	if json.Unmarshal(body, &notes) != nil {
		var one note
		if json.Unmarshal(body, &one) != nil {
			return
		}
		notes = []note{one}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range notes {
		if n.Method == "notifications/cancelled" && isID(n.Params.RequestID) {
			if c, ok := f.calls[fastCallID{session, requestKey(n.Params.RequestID)}]; ok {
				c.cancel()
			}
		}
	}
}

// endSession cancels every fast call of a closed session.
func (f *fastSessions) endSession(session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, c := range f.calls {
		if k.session == session {
			c.cancel()
		}
	}
}

// requestKey is a request id as a map key: a string as itself, a number
// by its value, so that 7 and 7.0 name the same request.
func requestKey(id json.RawMessage) string {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return string(id)
	}
	if str, ok := v.(string); ok {
		return "s" + str
	}
	return fmt.Sprint("n", v)
}

// fastRequest is a plain tools/call: its id, tool and arguments.
type fastRequest struct {
	id, name, args json.RawMessage
}

// parseFastRequest reads body as a plain tools/call, reporting false for
// anything else: other keys than a plain call has (case counts, as it does
// for the SDK), another method, an id that is not a number or a string.
func parseFastRequest(body []byte) (fastRequest, bool) {
	var top, params map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || !onlyKeys(top, "jsonrpc", "id", "method", "params") ||
		string(top["jsonrpc"]) != `"2.0"` || string(top["method"]) != `"tools/call"` || !isID(top["id"]) ||
		json.Unmarshal(top["params"], &params) != nil || !onlyKeys(params, "name", "arguments") {
		return fastRequest{}, false
	}
	name := params["name"]
	if len(name) < 2 || name[0] != '"' {
		return fastRequest{}, false
	}
	return fastRequest{id: top["id"], name: name, args: params["arguments"]}, true
}

// onlyKeys tells whether m has no other keys than keys.
func onlyKeys(m map[string]json.RawMessage, keys ...string) bool {
	n := 0
	for _, k := range keys {
		if _, ok := m[k]; ok {
			n++
		}
	}
	return n == len(m)
}

// maxFastBody is the largest body the fast path answers; a longer one (a
// big message is refused by the team anyway) goes to the SDK.
const maxFastBody = 1 << 20

// fastCall answers r, a POST of identity me on a session me opened, with
// body, when it is a plain tools/call, and reports whether it did.
func (s *Server) fastCall(w http.ResponseWriter, r *http.Request, me store.AgentKey, body []byte) bool {
	if len(body) == 0 || len(body) > maxFastBody {
		return false
	}
	if !fastVersions[r.Header.Get("Mcp-Protocol-Version")] || r.Header.Get("Last-Event-ID") != "" ||
		!isJSON(r.Header.Get("Content-Type")) || !acceptsBoth(r.Header.Values("Accept")) || !hostAllowed(r) {
		return false
	}
	if !bytes.Contains(body, []byte(`"tools/call"`)) {
		return false
	}
	req, ok := parseFastRequest(body)
	var name string
	if !ok || json.Unmarshal(req.name, &name) != nil {
		return false
	}
	handler := s.toolHandler(me, name)
	if handler == nil {
		return false
	}
	ctx, done := s.fast.begin(r.Context(), r.Header.Get("Mcp-Session-Id"), req.id)
	defer done()
	res, err := handler(ctx, &mcp.CallToolRequest{
		Params: &mcp.CallToolParamsRaw{Name: name, Arguments: req.args},
		Extra:  &mcp.RequestExtra{Header: r.Header},
	})
	var out []byte
	if err == nil {
		out, err = json.Marshal(res)
	}
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Content-Type", "application/json")
	buf := make([]byte, 0, len(out)+len(req.id)+40)
	buf = append(append(append(buf, `{"jsonrpc":"2.0","id":`...), req.id...), ',')
	if err != nil { // the handlers turn their errors into tool results: this is a bug
		s.log.Error("tools/call", "tool", name, "agent", me.String(), "error", err)
		buf = append(buf, `"error":{"code":-32603,"message":"internal error"}}`...)
	} else {
		buf = append(append(append(buf, `"result":`...), out...), '}')
	}
	_, _ = w.Write(buf) // a client gone mid-answer is its own business
	return true
}

// toolHandler is me's handler of tool name, nil when there is none.
func (s *Server) toolHandler(me store.AgentKey, name string) mcp.ToolHandler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handlers[me][name]
}

// isID tells whether raw is a JSON-RPC request id: a number or a string.
func isID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	c := raw[0]
	return c == '"' || c == '-' || c >= '0' && c <= '9'
}

func isJSON(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && t == "application/json"
}

// acceptsBoth tells whether Accept lists both media types the streamable
// transport requires of a POST.
func acceptsBoth(accept []string) bool {
	var jsonOK, streamOK bool
	for _, line := range accept {
		for _, part := range strings.Split(line, ",") {
			t, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			switch strings.ToLower(strings.TrimSpace(t)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// hostAllowed is the SDK's DNS-rebinding guard: a request that reached a
// loopback address must name a loopback host.
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !isLoopback(local.String()) {
		return true
	}
	return isLoopback(r.Host)
}

func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
