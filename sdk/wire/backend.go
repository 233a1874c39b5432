package wire

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/internal/pbtime"
	"github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/wire/grpcerr"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// The pure conversions between the Go types plugin authors use and the
// wire messages of protocol v1 (terraform-plugin-go's toProto/fromProto).
// Each accepts nil and zero values; backend_test.go checks nil, zero and
// full values round trip.

func RequestToProto(r backend.Request) *pluginv1.RunRequest {
	return &pluginv1.RunRequest{
		RunId:          r.RunID,
		Attempt:        int64(r.Attempt),
		Agent:          agentToProto(r.Agent),
		Daemon:         mcpServerToProto(r.Daemon),
		McpServers:     mcpServersToProto(r.MCPServers),
		WorkDir:        r.WorkDir,
		ProjectDir:     r.ProjectDir,
		ResumeSession:  r.ResumeSession,
		StateDir:       r.StateDir,
		Env:            maps.Clone(r.Env),
		Context:        runContextToProto(r.RunContext),
		Sandbox:        sandboxToProto(r.Sandbox),
		SandboxApplied: r.SandboxApplied,
		ProcessKey:     r.ProcessKey,
		Repos:          reposToProto(r.Repos),
	}
}

func RequestFromProto(r *pluginv1.RunRequest) backend.Request {
	return backend.Request{
		RunID:          r.GetRunId(),
		Attempt:        int(r.GetAttempt()),
		Agent:          agentFromProto(r.GetAgent()),
		Daemon:         mcpServerFromProto(r.GetDaemon()),
		MCPServers:     mcpServersFromProto(r.GetMcpServers()),
		WorkDir:        r.GetWorkDir(),
		ProjectDir:     r.GetProjectDir(),
		ResumeSession:  r.GetResumeSession(),
		StateDir:       r.GetStateDir(),
		Env:            mapOrNil(r.GetEnv()),
		RunContext:     runContextFromProto(r.GetContext()),
		Sandbox:        sandboxFromProto(r.GetSandbox()),
		SandboxApplied: r.GetSandboxApplied(),
		ProcessKey:     r.GetProcessKey(),
		Repos:          reposFromProto(r.GetRepos()),
	}
}

func reposToProto(rs []backend.Repo) []*pluginv1.Repo {
	var out []*pluginv1.Repo
	for _, r := range rs {
		out = append(out, &pluginv1.Repo{Name: r.Name, Path: r.Path, Write: r.Write})
	}
	return out
}

func reposFromProto(rs []*pluginv1.Repo) []backend.Repo {
	var out []backend.Repo
	for _, r := range rs {
		out = append(out, backend.Repo{Name: r.GetName(), Path: r.GetPath(), Write: r.GetWrite()})
	}
	return out
}

// runContextToProto keeps "no context" (nil) apart from an empty one: a
// worker fetches over MCP only when the daemon sent none.
func runContextToProto(c *backend.RunContext) *pluginv1.RunContext {
	if c == nil {
		return nil
	}
	docs := make([]*pluginv1.DocumentInfo, len(c.Documents))
	for i, d := range c.Documents {
		docs[i] = &pluginv1.DocumentInfo{Path: d.Path, Size: d.Size, UpdatedAt: pbtime.ToProto(d.UpdatedAt)}
	}
	var effort string
	if c.Effort != nil {
		b, _ := json.Marshal(c.Effort) // plain structs always encode
		effort = string(b)
	}
	return &pluginv1.RunContext{
		Inbox:          messagesToProto(c.Inbox.Messages),
		InboxNewestSeq: c.Inbox.NewestSeq,
		Recent:         messagesToProto(c.Recent),
		Notes:          c.Notes,
		Documents:      docs,
		EffortJson:     effort,
	}
}

// runContextFromProto returns nil for a request without a context. Its
// slices are never nil, as the tools' results are not.
func runContextFromProto(c *pluginv1.RunContext) *backend.RunContext {
	if c == nil {
		return nil
	}
	inbox := messagesFromProto(c.GetInbox())
	docs := make([]tools.DocumentInfo, len(c.GetDocuments()))
	for i, d := range c.GetDocuments() {
		docs[i] = tools.DocumentInfo{Path: d.GetPath(), Size: d.GetSize(), UpdatedAt: pbtime.FromProto(d.GetUpdatedAt())}
	}
	var effort *tools.EffortContext
	if s := c.GetEffortJson(); s != "" {
		effort = &tools.EffortContext{}
		if json.Unmarshal([]byte(s), effort) != nil {
			effort = nil // a daemon's effort the worker cannot read: the tools still show it
		}
	}
	return &backend.RunContext{
		Inbox:     tools.InboxResult{Messages: inbox, Count: len(inbox), NewestSeq: c.GetInboxNewestSeq()},
		Recent:    messagesFromProto(c.GetRecent()),
		Notes:     c.GetNotes(),
		Documents: docs,
		Effort:    effort,
	}
}

func messagesToProto(ms []tools.Message) []*pluginv1.ChannelMessage {
	out := make([]*pluginv1.ChannelMessage, len(ms))
	for i, m := range ms {
		out[i] = &pluginv1.ChannelMessage{
			Seq: m.Seq, Id: m.ID, Workflow: m.Workflow, Tag: m.Tag, From: m.From, Content: m.Content,
			Kind: m.Kind, To: m.To, Mentions: slices.Clone(m.Mentions), ResourceId: m.ResourceID,
			CreatedAt: pbtime.ToProto(m.CreatedAt),
		}
	}
	return out
}

func messagesFromProto(ms []*pluginv1.ChannelMessage) []tools.Message {
	out := make([]tools.Message, len(ms))
	for i, m := range ms {
		mentions := slices.Clone(m.GetMentions())
		if mentions == nil {
			mentions = []string{} // as the tools send it: "mentions": []
		}
		out[i] = tools.Message{
			Seq: m.GetSeq(), ID: m.GetId(), Workflow: m.GetWorkflow(), Tag: m.GetTag(), From: m.GetFrom(),
			Content: m.GetContent(), Kind: m.GetKind(), To: m.GetTo(), Mentions: mentions,
			ResourceID: m.GetResourceId(), CreatedAt: pbtime.FromProto(m.GetCreatedAt()),
		}
	}
	return out
}

func agentToProto(a backend.Agent) *pluginv1.Agent {
	return &pluginv1.Agent{
		Name:     a.Name,
		Workflow: a.Workflow,
		Tag:      a.Tag,
		Model:    a.Model,
		System:   a.System,
		Config:   bytesOrNil(a.Config),
	}
}

func agentFromProto(a *pluginv1.Agent) backend.Agent {
	return backend.Agent{
		Name:     a.GetName(),
		Workflow: a.GetWorkflow(),
		Tag:      a.GetTag(),
		Model:    a.GetModel(),
		System:   a.GetSystem(),
		Config:   rawOrNil(a.GetConfig()),
	}
}

func mcpServerToProto(s backend.MCPServer) *pluginv1.McpServer {
	return &pluginv1.McpServer{
		Name:    s.Name,
		Url:     s.URL,
		Headers: maps.Clone(s.Headers),
		Command: slices.Clone(s.Command),
		Env:     maps.Clone(s.Env),
	}
}

func mcpServerFromProto(s *pluginv1.McpServer) backend.MCPServer {
	return backend.MCPServer{
		Name:    s.GetName(),
		URL:     s.GetUrl(),
		Headers: mapOrNil(s.GetHeaders()),
		Command: slices.Clone(s.GetCommand()),
		Env:     mapOrNil(s.GetEnv()),
	}
}

func mcpServersToProto(ss []backend.MCPServer) []*pluginv1.McpServer {
	if len(ss) == 0 {
		return nil
	}
	out := make([]*pluginv1.McpServer, len(ss))
	for i, s := range ss {
		out[i] = mcpServerToProto(s)
	}
	return out
}

func mcpServersFromProto(ss []*pluginv1.McpServer) []backend.MCPServer {
	if len(ss) == 0 {
		return nil
	}
	out := make([]backend.MCPServer, len(ss))
	for i, s := range ss {
		out[i] = mcpServerFromProto(s)
	}
	return out
}

// EventToProto puts e on the wire. Only the fields of e's kind cross: Text
// for text, result and log; Tool for tool calls and results (a nil Tool is
// sent empty); Usage for usage (nil is zero); SessionID for session. An
// unknown kind is sdk.ErrInvalid, so that the author learns of the typo in
// the plugin rather than the daemon dropping the event.
func EventToProto(e backend.Event) (*pluginv1.RunResponse, error) {
	var r pluginv1.RunResponse
	switch e.Kind {
	case backend.EventText:
		r.Response = &pluginv1.RunResponse_Text{Text: &pluginv1.Text{Text: e.Text}}
	case backend.EventResult:
		r.Response = &pluginv1.RunResponse_Result{Result: &pluginv1.Text{Text: e.Text}}
	case backend.EventLog:
		r.Response = &pluginv1.RunResponse_Log{Log: &pluginv1.Text{Text: e.Text}}
	case backend.EventSandbox:
		r.Response = &pluginv1.RunResponse_Sandbox{Sandbox: &pluginv1.Text{Text: e.Text}}
	case backend.EventGate:
		r.Response = &pluginv1.RunResponse_Gate{Gate: &pluginv1.Text{Text: e.Text}}
	case backend.EventToolCall:
		r.Response = &pluginv1.RunResponse_ToolCall{ToolCall: toolToProto(e.Tool)}
	case backend.EventToolResult:
		r.Response = &pluginv1.RunResponse_ToolResult{ToolResult: toolToProto(e.Tool)}
	case backend.EventUsage:
		r.Response = &pluginv1.RunResponse_Usage{Usage: usageToProto(e.Usage)}
	case backend.EventHeartbeat:
		r.Response = &pluginv1.RunResponse_Heartbeat{Heartbeat: &pluginv1.Heartbeat{}}
	case backend.EventSession:
		r.Response = &pluginv1.RunResponse_Session{Session: &pluginv1.Session{SessionId: e.SessionID}}
	default:
		return nil, sdk.Errorf(sdk.ErrInvalid, "event kind %q is unknown; use one of the backend.Event* kinds", e.Kind)
	}
	return &r, nil
}

// EventFromProto reads one event; ok is false for a response that is no
// event this version knows (an error, or an event kind added by a later
// minor version), which the daemon skips.
func EventFromProto(r *pluginv1.RunResponse) (e backend.Event, ok bool) {
	switch v := r.GetResponse().(type) {
	case *pluginv1.RunResponse_Text:
		return backend.Event{Kind: backend.EventText, Text: v.Text.GetText()}, true
	case *pluginv1.RunResponse_Result:
		return backend.Event{Kind: backend.EventResult, Text: v.Result.GetText()}, true
	case *pluginv1.RunResponse_Log:
		return backend.Event{Kind: backend.EventLog, Text: v.Log.GetText()}, true
	case *pluginv1.RunResponse_Sandbox:
		return backend.Event{Kind: backend.EventSandbox, Text: v.Sandbox.GetText()}, true
	case *pluginv1.RunResponse_Gate:
		return backend.Event{Kind: backend.EventGate, Text: v.Gate.GetText()}, true
	case *pluginv1.RunResponse_ToolCall:
		return backend.Event{Kind: backend.EventToolCall, Tool: toolFromProto(v.ToolCall)}, true
	case *pluginv1.RunResponse_ToolResult:
		return backend.Event{Kind: backend.EventToolResult, Tool: toolFromProto(v.ToolResult)}, true
	case *pluginv1.RunResponse_Usage:
		return backend.Event{Kind: backend.EventUsage, Usage: usageFromProto(v.Usage)}, true
	case *pluginv1.RunResponse_Heartbeat:
		return backend.Event{Kind: backend.EventHeartbeat}, true
	case *pluginv1.RunResponse_Session:
		return backend.Event{Kind: backend.EventSession, SessionID: v.Session.GetSessionId()}, true
	}
	return backend.Event{}, false
}

func toolToProto(t *backend.ToolCall) *pluginv1.ToolCall {
	if t == nil {
		return &pluginv1.ToolCall{}
	}
	return &pluginv1.ToolCall{
		Id:      t.ID,
		Name:    t.Name,
		Args:    bytesOrNil(t.Args),
		Result:  t.Result,
		IsError: t.IsError,
		Exit:    exitToProto(t.Exit),
	}
}

// toolFromProto always returns a ToolCall, so that the daemon can read
// Tool of a tool event without a nil check.
func toolFromProto(t *pluginv1.ToolCall) *backend.ToolCall {
	return &backend.ToolCall{
		ID:      t.GetId(),
		Name:    t.GetName(),
		Args:    rawOrNil(t.GetArgs()),
		Result:  t.GetResult(),
		IsError: t.GetIsError(),
		Exit:    exitFromProto(t),
	}
}

// exitToProto is a shell tool's exit status; nil stays unset.
func exitToProto(x *int) *int32 {
	if x == nil {
		return nil
	}
	v := int32(*x)
	return &v
}

// exitFromProto reads the exit status back; unset is nil.
func exitFromProto(t *pluginv1.ToolCall) *int {
	if t == nil || t.Exit == nil {
		return nil
	}
	v := int(t.GetExit())
	return &v
}

func usageToProto(u *backend.Usage) *pluginv1.Usage {
	if u == nil {
		return &pluginv1.Usage{}
	}
	return &pluginv1.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostUsd: u.CostUSD, Call: callToProto(u.Call)}
}

// usageFromProto always returns a Usage, like toolFromProto.
func usageFromProto(u *pluginv1.Usage) *backend.Usage {
	return &backend.Usage{InputTokens: u.GetInputTokens(), OutputTokens: u.GetOutputTokens(), CostUSD: u.GetCostUsd(), Call: callFromProto(u.GetCall())}
}

// callToProto keeps a zero time unset, as pbtime does.
func callToProto(c *backend.ModelCall) *pluginv1.ModelCall {
	if c == nil {
		return nil
	}
	return &pluginv1.ModelCall{Model: c.Model, ResponseModel: c.ResponseModel, Start: pbtime.ToProto(c.Start), End: pbtime.ToProto(c.End),
		InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, FinishReasons: c.FinishReasons}
}

// callFromProto is nil for a usage event without a call (an older
// plugin, or a backend that does not call the model itself).
func callFromProto(c *pluginv1.ModelCall) *backend.ModelCall {
	if c == nil {
		return nil
	}
	return &backend.ModelCall{Model: c.GetModel(), ResponseModel: c.GetResponseModel(), Start: pbtime.FromProto(c.GetStart()), End: pbtime.FromProto(c.GetEnd()),
		InputTokens: c.GetInputTokens(), OutputTokens: c.GetOutputTokens(), FinishReasons: c.GetFinishReasons()}
}

// ErrorToProto describes a failed run: message, class, and the Permanent
// mark.
func ErrorToProto(err error) *pluginv1.Error {
	return grpcerr.ToProto(err, backend.IsPermanent(err))
}

// ErrorFromProto rebuilds a failed run's error, Permanent mark included.
func ErrorFromProto(e *pluginv1.Error) error {
	err, permanent := grpcerr.FromProto(e)
	if permanent {
		return backend.Permanent(err)
	}
	return err
}

func bytesOrNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}

// rawOrNil keeps "no value" nil after the wire turned it into an empty
// slice.
func rawOrNil(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(slices.Clone(b))
}

func mapOrNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// sandboxToProto is the policy as JSON; nil for a run without one.
func sandboxToProto(p sandbox.Policy) []byte {
	if p.IsZero() {
		return nil
	}
	b, _ := json.Marshal(p) // plain fields: cannot fail
	return b
}

// sandboxFromProto reads the policy back; unreadable JSON yields a policy
// that grants nothing rather than none, so a damaged request never runs
// unconfined.
func sandboxFromProto(b []byte) sandbox.Policy {
	var p sandbox.Policy
	if len(b) == 0 {
		return p
	}
	if err := json.Unmarshal(b, &p); err != nil || p.IsZero() {
		return sandbox.Policy{Read: []string{"/nonexistent"}}
	}
	return p
}
