package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// Message, Member and Document are the shapes of the daemon's tool
// results (sdk/tools), under the names worker code has used.
type (
	Message  = tools.Message
	Member   = tools.Member
	Document = tools.DocumentInfo
)

// sessionProtocol is the MCP protocol version the daemon's stateful server
// speaks; see Connect.
const sessionProtocol = "2025-11-25"

// Client is an MCP session with the daemon, acting as the run's agent: the
// token in the request's Daemon headers decides who that is.
type Client struct {
	session   *mcp.ClientSession
	newestSeq atomic.Int64
	gate      *Gate
}

// Connect opens an MCP session over streamable HTTP to daemon.URL, sending
// daemon.Headers (the run's bearer token) with every request. Close it when
// the run ends.
func Connect(ctx context.Context, daemon backend.MCPServer) (*Client, error) {
	if daemon.URL == "" {
		return nil, errors.New("connect to daemon: the request has no daemon MCP URL")
	}
	transport := &mcp.StreamableClientTransport{
		Endpoint:             daemon.URL,
		HTTPClient:           HeaderClient(daemon.Headers),
		DisableStandaloneSSE: true, // only answers to our own calls matter
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent-worker-sdk", Version: "1"}, nil)
	// The daemon serves sessions (initialize), so a client that first tries
	// the stateless server/discover of newer protocol versions spends a
	// round trip on every run learning that; ask for the session one.
	s, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: sessionProtocol})
	if err != nil {
		return nil, fmt.Errorf("connect to daemon at %s: %w", daemon.URL, err)
	}
	return &Client{session: s, gate: NewGate(daemon)}, nil
}

// Close ends the session.
func (c *Client) Close() error { return c.session.Close() }

// HeaderClient returns an HTTP client that sends headers with every
// request. An MCPServer in a RunRequest carries its headers (the daemon's
// bearer token, an agent's own server's API key) as a plain map, and the
// MCP SDK's streamable transport takes only an *http.Client, so every
// backend that dials an MCP URL needs this; it lives here once.
func HeaderClient(headers map[string]string) *http.Client {
	hdr := make(http.Header, len(headers))
	for k, v := range headers {
		hdr.Set(k, v)
	}
	return &http.Client{Transport: headerTransport{base: http.DefaultTransport, header: hdr}}
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// ToolError is a tool's refusal (bad input, not found, not allowed): the
// call reached the daemon, which answered with Message. A model would read
// it and try differently; a transport failure is any other error.
type ToolError struct {
	Tool    string
	Message string
}

// Error is the tool's message, as the daemon wrote it for the caller.
func (e *ToolError) Error() string { return e.Message }

// Call calls any daemon tool by name and returns its structured result and
// its short text. A tool error is returned as a *ToolError whose text is the
// tool's message.
func (c *Client) Call(ctx context.Context, tool string, args map[string]any) (structured json.RawMessage, text string, err error) {
	if args == nil {
		args = map[string]any{}
	}
	res, err := c.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", tool, err)
	}
	var parts []string
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	text = strings.Join(parts, "\n")
	if res.IsError {
		return nil, text, &ToolError{Tool: tool, Message: text}
	}
	if res.StructuredContent != nil {
		if structured, err = json.Marshal(res.StructuredContent); err != nil {
			return nil, text, fmt.Errorf("%s: encode result: %w", tool, err)
		}
	}
	return structured, text, nil
}

// call calls tool and decodes its structured result into Out.
func call[Out any](ctx context.Context, c *Client, tool string, args map[string]any) (Out, error) {
	var out Out
	raw, _, err := c.Call(ctx, tool, args)
	if err != nil {
		return out, err
	}
	if len(raw) == 0 {
		return out, fmt.Errorf("%s: the daemon returned no structured result", tool)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, fmt.Errorf("%s: decode result: %w", tool, err)
	}
	return out, nil
}

type messages struct {
	Messages  []Message `json:"messages"`
	NewestSeq int64     `json:"newest_seq"`
}

// Inbox returns the unread messages addressed to the agent, oldest first,
// without marking them read; NewestSeq then tells what to ack.
func (c *Client) Inbox(ctx context.Context) ([]Message, error) {
	out, err := call[messages](ctx, c, "my_inbox", nil)
	if err != nil {
		return nil, err
	}
	c.newestSeq.Store(out.NewestSeq)
	return out.Messages, nil
}

// NewestSeq is the newest_seq of the last Inbox call (0 before one, or when
// the inbox was empty): what Ack takes to mark those messages read.
func (c *Client) NewestSeq() int64 { return c.newestSeq.Load() }

// Read returns channel messages, oldest first: the latest limit ones when
// sinceSeq is 0, else up to limit after sinceSeq. A zero limit is the
// daemon's default (50); the daemon allows at most 200.
func (c *Client) Read(ctx context.Context, sinceSeq int64, limit int) ([]Message, error) {
	args := map[string]any{}
	if sinceSeq > 0 {
		args["since_seq"] = sinceSeq
	}
	if limit != 0 {
		args["limit"] = limit
	}
	out, err := call[messages](ctx, c, "channel_read", args)
	return out.Messages, err
}

// SendResult is what channel_send reports.
type SendResult = tools.SendResult

// Send posts message to the channel; @mentions wake teammates. A non-empty
// to makes it a direct message.
func (c *Client) Send(ctx context.Context, message, to string) (SendResult, error) {
	args := map[string]any{"message": message}
	if to != "" {
		args["to"] = to
	}
	return call[SendResult](ctx, c, "channel_send", args)
}

// Ack marks the inbox read up to and including untilSeq. Backends normally
// leave this to the daemon, which acks when the run succeeds.
func (c *Client) Ack(ctx context.Context, untilSeq int64) error {
	_, _, err := c.Call(ctx, "my_inbox_ack", map[string]any{"until_seq": untilSeq})
	return err
}

// SetStatus tells teammates what the agent is doing; an empty state or task
// is left as it was.
func (c *Client) SetStatus(ctx context.Context, state, task string) error {
	args := map[string]any{}
	if state != "" {
		args["state"] = state
	}
	if task != "" {
		args["task"] = task
	}
	_, _, err := c.Call(ctx, "my_status_set", args)
	return err
}

// Members lists the team, the agent included.
func (c *Client) Members(ctx context.Context) ([]Member, error) {
	out, err := call[struct {
		Members []Member `json:"members"`
	}](ctx, c, "team_members", nil)
	return out.Members, err
}

// DocRead returns a shared document; file "" is notes.md, which reads as
// empty until someone writes it.
func (c *Client) DocRead(ctx context.Context, file string) (string, error) {
	out, err := call[struct {
		Content string `json:"content"`
	}](ctx, c, "team_doc_read", docArgs(file, nil))
	return out.Content, err
}

// DocWrite replaces a shared document (file "" is notes.md), creating it if
// needed.
func (c *Client) DocWrite(ctx context.Context, file, content string) error {
	_, _, err := c.Call(ctx, "team_doc_write", docArgs(file, &content))
	return err
}

// DocAppend adds content to the end of a shared document (file "" is
// notes.md), creating it if needed; safer than DocWrite when teammates edit.
func (c *Client) DocAppend(ctx context.Context, file, content string) error {
	_, _, err := c.Call(ctx, "team_doc_append", docArgs(file, &content))
	return err
}

// DocCreate creates a new shared document and fails if one with that name
// exists.
func (c *Client) DocCreate(ctx context.Context, file, content string) error {
	_, _, err := c.Call(ctx, "team_doc_create", map[string]any{"file": file, "content": content})
	return err
}

// DocList lists the team's shared documents.
func (c *Client) DocList(ctx context.Context) ([]Document, error) {
	out, err := call[struct {
		Documents []Document `json:"documents"`
	}](ctx, c, "team_doc_list", nil)
	return out.Documents, err
}

func docArgs(file string, content *string) map[string]any {
	args := map[string]any{}
	if file != "" {
		args["file"] = file
	}
	if content != nil {
		args["content"] = *content
	}
	return args
}

// ResourceCreate stores large content (typ: markdown, json, text or diff;
// "" is text) and returns its id, to pass around instead of the content.
func (c *Client) ResourceCreate(ctx context.Context, content, typ string) (string, error) {
	args := map[string]any{"content": content}
	if typ != "" {
		args["type"] = typ
	}
	out, err := call[struct {
		ID string `json:"id"`
	}](ctx, c, "resource_create", args)
	return out.ID, err
}

// ResourceRead returns the content of a resource of the team.
func (c *Client) ResourceRead(ctx context.Context, id string) (string, error) {
	out, err := call[struct {
		Content string `json:"content"`
	}](ctx, c, "resource_read", map[string]any{"id": id})
	return out.Content, err
}
