package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// maxCallBody bounds the body of an authenticated MCP request. The largest
// argument a tool takes is resource_create's content: ten times the
// team's longest message in characters, at most store.MaxResourceBytes
// (10 MiB) in bytes. As a JSON string it grows by its escapes (a quote,
// backslash, tab or newline takes two bytes; a control character, and <,
// > and & from Go's encoder, six), so twice the store's ceiling plus a
// mebibyte for the envelope carries any resource the store takes.
const maxCallBody = 2*store.MaxResourceBytes + 1<<20

// maxDrain is how much more than maxCallBody of a refused body ServeHTTP
// reads and throws away, so that a client still sending it reads the
// refusal instead of a reset connection; beyond it the connection closes.
// Only an authenticated agent gets this far.
const maxDrain = 64 << 20

// JSON-RPC error codes of the refusals ServeHTTP writes itself.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
)

// tokenInfoKey carries the *auth.TokenInfo of the checked token to the
// verifier of the SDK's middleware (see New).
type tokenInfoKey struct{}

// ServeHTTP authenticates the bearer token before it reads anything of
// the body, reads the body of an authenticated POST within maxCallBody,
// then hands the request to the fast path or the SDK. An unknown or
// revoked token gets 401 with the body unread: net/http throws away at
// most 256 KiB of it to keep the connection, and closes it beyond.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		unauthorized(w, "missing bearer token: MCP clients need the agent token from `agent-worker mcp-config <agent>`")
		return
	}
	tok, err := s.db.LookupToken(r.Context(), token)
	if err != nil {
		if api.ErrorCode(err) == api.CodeNotFound {
			unauthorized(w, "unknown or revoked agent token: get a new one with `agent-worker mcp-config <agent>`")
			return
		}
		if api.ErrorCode(err) == api.CodeUnavailable {
			// The store is down: the client may retry; nothing is wrong
			// with its token.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "{\"error\":%q,\"code\":%q}\n", err.Error(), api.CodeUnavailable)
			return
		}
		s.log.Error("token lookup", "error", err)
		http.Error(w, `{"error":"internal error","code":"internal"}`, http.StatusInternalServerError)
		return
	}
	// The session's owner is the agent, not the token: an agent may hold
	// several tokens (each mcp-config mints one, each run has its own).
	ctx := context.WithValue(r.Context(), ctxKey{}, tok.Key)
	ctx = context.WithValue(ctx, tokenInfoKey{}, &auth.TokenInfo{UserID: tok.Key.String()})
	r = r.WithContext(ctx)
	r.Header.Set(identityHeader, tok.Key.String())
	r.Header.Set(runHeader, tok.RunID)
	if strings.HasSuffix(r.URL.Path, tools.GatePath) {
		s.serveGate(w, r, tok.Key)
		return
	}
	if r.Method != http.MethodPost || r.Body == nil {
		s.handler.ServeHTTP(w, r)
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		if owner, ok := s.fast.owner(sid); ok && owner == tok.Key {
			s.fast.cancelNotified(sid, body)
			if s.fastCall(w, r, tok.Key, body) {
				return
			}
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	s.handler.ServeHTTP(w, r)
}

// readBody reads r's body, refusing one over maxCallBody (413) or not
// UTF-8 (400) with a JSON-RPC error; it reports false when it answered.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	tooBig := func() ([]byte, bool) {
		_, _ = io.CopyN(io.Discard, r.Body, maxDrain)
		rpcError(w, http.StatusRequestEntityTooLarge, rpcInvalidRequest, fmt.Sprintf(
			"request body is over %d bytes (%d MiB), more than any tool call needs: a resource holds at most %d MiB; split the content",
			maxCallBody, maxCallBody>>20, store.MaxResourceBytes>>20))
		return nil, false
	}
	if r.ContentLength > maxCallBody {
		return tooBig()
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCallBody+1))
	if err != nil { // the client left mid-body: nobody reads an answer
		s.log.Debug("read MCP request", "error", err)
		return nil, false
	}
	if len(body) > maxCallBody {
		return tooBig()
	}
	// Not UTF-8: decoding would store what it cannot read as U+FFFD.
	if err := api.CheckUTF8(body); err != nil {
		rpcError(w, http.StatusBadRequest, rpcParseError, err.Error())
		return nil, false
	}
	return body, true
}

// rpcError answers a JSON-RPC error for a request whose id is unknown.
func rpcError(w http.ResponseWriter, status, code int, msg string) {
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
