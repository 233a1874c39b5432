// Command fakeacp is a scripted ACP agent for the acp backend's tests: it
// speaks ACP over stdio (the agent side of github.com/coder/acp-go-sdk),
// calls the daemon's MCP server it is handed in session/new as an MCP
// client, asks permissions and files of the client, and keeps its
// sessions in a folder so that session/load resumes them.
//
// Environment: FAKEACP_SCRIPT, a JSON array of steps run for each prompt
// (text, tool, permission, read, write, usage, cost, plan, hang; when limits
// a step to prompts that contain its text);
// FAKEACP_DIR, where sessions are kept; FAKEACP_RECORD, a file of JSON
// lines, one per request the client made; FAKEACP_MODE, "garbage" (print
// something else than JSON-RPC), "silent" (never answer), "version2"
// (answer protocol version 2) or "nohttp" (no HTTP MCP servers).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type step struct {
	Text       string         `json:"text,omitempty"`
	Tool       string         `json:"tool,omitempty"`
	Args       map[string]any `json:"args,omitempty"`
	Permission *permission    `json:"permission,omitempty"`
	Read       string         `json:"read,omitempty"`
	Write      string         `json:"write,omitempty"`
	Content    string         `json:"content,omitempty"`
	Usage      *[2]int        `json:"usage,omitempty"`
	// Cost adds to the session's cumulative cost, reported in USD by a
	// usage_update.
	Cost float64  `json:"cost,omitempty"`
	Plan []string `json:"plan,omitempty"`
	Hang bool     `json:"hang,omitempty"`
	// When runs the step only if the prompt contains it.
	When string `json:"when,omitempty"`
}

type permission struct {
	Kind    string `json:"kind"`
	Title   string `json:"title"`
	Command string `json:"command,omitempty"`
	Path    string `json:"path,omitempty"`
	// Abort ends the turn cancelled when the permission is not granted,
	// as codex-acp does (its only reject option is "abort").
	Abort bool `json:"abort,omitempty"`
}

// stored is a session as kept in FAKEACP_DIR.
type stored struct {
	Turns   []string `json:"turns"`
	Cost    float64  `json:"cost"`
	Cwd     string   `json:"cwd"`
	Servers []acp.McpServer
}

type agent struct {
	conn   *acp.AgentSideConnection
	script []step
	mode   string

	mu       sync.Mutex
	sessions map[acp.SessionId]*stored
	cancels  map[acp.SessionId]context.CancelFunc
}

func main() {
	mode := os.Getenv("FAKEACP_MODE")
	switch mode {
	case "garbage":
		fmt.Println("Usage: fakeacp [options] -- this is not JSON-RPC")
		time.Sleep(time.Hour)
	case "silent":
		time.Sleep(time.Hour)
	}
	var script []step
	if s := os.Getenv("FAKEACP_SCRIPT"); s != "" {
		if err := json.Unmarshal([]byte(s), &script); err != nil {
			fmt.Fprintln(os.Stderr, "fakeacp: FAKEACP_SCRIPT:", err)
			os.Exit(2)
		}
	}
	a := &agent{script: script, mode: mode, sessions: map[acp.SessionId]*stored{}, cancels: map[acp.SessionId]context.CancelFunc{}}
	a.conn = acp.NewAgentSideConnection(a, os.Stdout, os.Stdin)
	fmt.Fprintln(os.Stderr, "fakeacp: ready")
	<-a.conn.Done()
}

func record(method string, params any) {
	file := os.Getenv("FAKEACP_RECORD")
	if file == "" {
		return
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	line, _ := json.Marshal(map[string]any{"method": method, "params": params})
	f.Write(append(line, '\n'))
}

func (a *agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	record("initialize", p)
	v := acp.ProtocolVersion(acp.ProtocolVersionNumber)
	if a.mode == "version2" {
		v = 2
	}
	return acp.InitializeResponse{ProtocolVersion: v, AgentInfo: &acp.Implementation{Name: "fakeacp", Version: "1.0.0"},
		AgentCapabilities: acp.AgentCapabilities{LoadSession: true, McpCapabilities: acp.McpCapabilities{Http: a.mode != "nohttp"}}}, nil
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) path(id acp.SessionId) string {
	return filepath.Join(os.Getenv("FAKEACP_DIR"), string(id)+".json")
}

func (a *agent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	record("session/new", p)
	id := acp.SessionId(fmt.Sprintf("sess-%d", time.Now().UnixNano()))
	a.mu.Lock()
	a.sessions[id] = &stored{Cwd: p.Cwd, Servers: p.McpServers}
	a.mu.Unlock()
	return acp.NewSessionResponse{SessionId: id}, nil
}

func (a *agent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	record("session/load", p)
	b, err := os.ReadFile(a.path(p.SessionId))
	if err != nil {
		return acp.LoadSessionResponse{}, acp.NewInvalidParams("no session " + string(p.SessionId))
	}
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return acp.LoadSessionResponse{}, err
	}
	// The conversation so far is replayed, as the protocol says.
	for _, t := range s.Turns {
		if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.UpdateAgentMessageText("(replayed) " + t)}); err != nil {
			return acp.LoadSessionResponse{}, err
		}
	}
	s.Cwd, s.Servers = p.Cwd, p.McpServers
	a.mu.Lock()
	a.sessions[p.SessionId] = &s
	a.mu.Unlock()
	return acp.LoadSessionResponse{}, nil
}

func (a *agent) Cancel(_ context.Context, p acp.CancelNotification) error {
	record("session/cancel", p)
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.cancels[p.SessionId]; c != nil {
		c()
	}
	return nil
}

func (a *agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	var text []string
	for _, b := range p.Prompt {
		if b.Text != nil {
			text = append(text, b.Text.Text)
		}
	}
	prompt := strings.Join(text, "\n")
	record("session/prompt", map[string]any{"sessionId": p.SessionId, "text": prompt})
	a.mu.Lock()
	s := a.sessions[p.SessionId]
	turn, cancel := context.WithCancel(ctx)
	a.cancels[p.SessionId] = cancel
	a.mu.Unlock()
	defer cancel()
	if s == nil {
		return acp.PromptResponse{}, acp.NewInvalidParams("unknown session")
	}
	say := func(t string) error {
		return a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.UpdateAgentMessageText(t)})
	}
	var usage *acp.Usage
	for i, st := range a.script {
		if st.When != "" && !strings.Contains(prompt, st.When) {
			continue
		}
		switch {
		case st.Text != "":
			t := strings.ReplaceAll(st.Text, "{{session}}", string(p.SessionId))
			t = strings.ReplaceAll(t, "{{turns}}", fmt.Sprint(len(s.Turns)))
			if err := say(t); err != nil {
				return acp.PromptResponse{}, err
			}
		case st.Tool != "":
			a.tool(ctx, p.SessionId, s, i, st)
		case st.Permission != nil:
			pm := st.Permission
			kind := acp.ToolKind(pm.Kind)
			raw := map[string]any{}
			if pm.Command != "" {
				raw["command"] = pm.Command
			}
			tc := acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(fmt.Sprintf("perm-%d", i)), Title: acp.Ptr(pm.Title), Kind: &kind, RawInput: raw}
			if pm.Path != "" {
				tc.Locations = []acp.ToolCallLocation{{Path: pm.Path}}
			}
			resp, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: p.SessionId, ToolCall: tc, Options: []acp.PermissionOption{
				{OptionId: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
				{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
			}})
			outcome := "cancelled"
			if err != nil {
				outcome = "error: " + err.Error()
			} else if resp.Outcome.Selected != nil {
				outcome = string(resp.Outcome.Selected.OptionId)
			}
			if err := say(fmt.Sprintf("permission %s: %s\n", pm.Title, outcome)); err != nil {
				return acp.PromptResponse{}, err
			}
			if pm.Abort && outcome != "allow" {
				return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
			}
		case st.Read != "":
			resp, err := a.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: p.SessionId, Path: st.Read})
			out := resp.Content
			if err != nil {
				out = "error: " + err.Error()
			}
			if err := say(fmt.Sprintf("read %s: %s\n", st.Read, out)); err != nil {
				return acp.PromptResponse{}, err
			}
		case st.Write != "":
			_, err := a.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: p.SessionId, Path: st.Write, Content: st.Content})
			out := "ok"
			if err != nil {
				out = "error: " + err.Error()
			}
			if err := say(fmt.Sprintf("write %s: %s\n", st.Write, out)); err != nil {
				return acp.PromptResponse{}, err
			}
		case st.Cost != 0:
			s.Cost += st.Cost
			u := acp.SessionUpdate{UsageUpdate: &acp.SessionUsageUpdate{SessionUpdate: "usage_update", Used: 1000, Size: 200000,
				Cost: &acp.Cost{Amount: s.Cost, Currency: "USD"}}}
			if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: u}); err != nil {
				return acp.PromptResponse{}, err
			}
		case st.Usage != nil:
			usage = &acp.Usage{InputTokens: st.Usage[0], OutputTokens: st.Usage[1], TotalTokens: st.Usage[0] + st.Usage[1]}
		case len(st.Plan) > 0:
			var es []acp.PlanEntry
			for _, c := range st.Plan {
				es = append(es, acp.PlanEntry{Content: c, Priority: acp.PlanEntryPriorityMedium, Status: acp.PlanEntryStatusPending})
			}
			if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.UpdatePlan(es...)}); err != nil {
				return acp.PromptResponse{}, err
			}
		case st.Hang:
			fmt.Fprintln(os.Stderr, "fakeacp: hanging until cancelled")
			<-turn.Done()
			record("cancelled", p.SessionId)
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		}
	}
	s.Turns = append(s.Turns, prompt[:min(len(prompt), 40)])
	if dir := os.Getenv("FAKEACP_DIR"); dir != "" {
		b, _ := json.Marshal(s)
		if err := os.WriteFile(a.path(p.SessionId), b, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "fakeacp: keep session:", err)
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn, Usage: usage}, nil
}

// tool calls one of the daemon's MCP tools through the session's server
// named agent-worker, reporting it as a tool call.
func (a *agent) tool(ctx context.Context, id acp.SessionId, s *stored, i int, st step) {
	callID := acp.ToolCallId(fmt.Sprintf("call-%d", i))
	_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: id, Update: acp.StartToolCall(callID, st.Tool,
		acp.WithStartKind(acp.ToolKindOther), acp.WithStartStatus(acp.ToolCallStatusInProgress), acp.WithStartRawInput(st.Args))})
	result, err := callMCP(ctx, s.Servers, st.Tool, st.Args)
	status := acp.ToolCallStatusCompleted
	if err != nil {
		status, result = acp.ToolCallStatusFailed, err.Error()
	}
	_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: id, Update: acp.UpdateToolCall(callID, acp.WithUpdateStatus(status),
		acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(result))}))})
}

type headers map[string]string

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func callMCP(ctx context.Context, servers []acp.McpServer, tool string, args map[string]any) (string, error) {
	var srv *acp.McpServerHttpInline
	for _, s := range servers {
		if s.Http != nil && s.Http.Name == "agent-worker" {
			srv = s.Http
		}
	}
	if srv == nil {
		return "", fmt.Errorf("no agent-worker MCP server in the session")
	}
	h := headers{}
	for _, x := range srv.Headers {
		h[x.Name] = x.Value
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "fakeacp", Version: "1.0.0"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.Url, HTTPClient: &http.Client{Transport: h}}, nil)
	if err != nil {
		return "", err
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	var out []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			out = append(out, t.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("%s", strings.Join(out, "\n"))
	}
	return strings.Join(out, "\n"), nil
}

func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, nil
}

func (a *agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound("session/resume")
}

func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}

func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}
