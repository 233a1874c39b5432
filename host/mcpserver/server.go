package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/host/telemetry"
	"github.com/agent-worker/agent-worker/store"
)

// identityHeader carries the authenticated identity from the token check to
// the tool handlers. The middleware overwrites whatever a client sent.
const identityHeader = "X-Agent-Worker-Identity"

// runHeader carries the run a token was minted for ("" for outside agents).
const runHeader = "X-Agent-Worker-Run"

type runKey struct{}

// runOf returns the run the calling token belongs to, if any.
func runOf(ctx context.Context) string {
	id, _ := ctx.Value(runKey{}).(string)
	return id
}

// Server is the MCP endpoint of the daemon.
type Server struct {
	svc *team.Service
	db  *store.DB
	log hclog.Logger
	// onTool hears every tool call: its tool, duration and error.
	onTool func(tool string, d time.Duration, err error)
	// Worktrees serves the worktree tools; set it before serving. Nil
	// answers them with an error.
	Worktrees Worktrees

	// mu guards the fields that follow. servers holds one *mcp.Server per
	// identity, because the SDK asks for the server on every request and
	// its tools close over the caller; renewed, when each outside agent
	// last renewed its task leases.
	mu       sync.Mutex
	servers  map[store.AgentKey]*mcp.Server
	handlers map[store.AgentKey]map[string]mcp.ToolHandler // the same tools, for fastCall
	renewed  map[store.AgentKey]time.Time
	policies map[store.AgentKey]cachedPolicy

	handler http.Handler
	fast    fastSessions // the sessions fastCall may answer

	// ProjectDir is an agent's working directory, where task_complete's
	// artifacts must exist; nil checks only that they stay inside it.
	ProjectDir func(context.Context, store.AgentKey) (string, error)
	// Spawner serves agent_spawn and agent_stop; set before serving.
	Spawner Spawner
	// Runs stops a run's timeouts while a gated call waits for approval;
	// nil leaves them running.
	Runs RunWaiter
	// Efforts serves the effort tools and a run's effort context; set
	// before serving. Nil answers the tools with an error.
	Efforts Efforts
	// Tracer, when set, gives each call an execute_tool span; RunTrace
	// names the traceparent of a run's span (its parent). Set before
	// serving.
	Tracer   trace.Tracer
	RunTrace func(runID string) string
	// Gate decides each tool call by the phase of the caller's effort and
	// hears the calls of outside agents as evidence; set it before
	// serving. Nil gates nothing.
	Gate Gate
}

// Spawner creates and stops the agents a planner spawns
// (host/agents.Registry).
type Spawner interface {
	// Spawn returns the new agent, the parent's live spawned agents and
	// its max_spawned.
	Spawn(ctx context.Context, parent store.AgentKey, name, system, backend, model string, roles []string) (a store.Agent, live, max int, err error)
	StopSpawned(ctx context.Context, parent store.AgentKey, name string) (store.Agent, error)
}

// New returns the MCP server over svc; tokens are checked against db.
// onTool, when set, hears every tool call as it ends (the daemon's
// metrics) and must return at once.
func New(svc *team.Service, db *store.DB, onTool func(tool string, d time.Duration, err error), log hclog.Logger) *Server {
	if onTool == nil {
		onTool = func(string, time.Duration, error) {}
	}
	s := &Server{svc: svc, db: db, log: log, onTool: onTool, servers: map[store.AgentKey]*mcp.Server{},
		handlers: map[store.AgentKey]map[string]mcp.ToolHandler{}, renewed: map[store.AgentKey]time.Time{}}
	sdk := mcp.NewStreamableHTTPHandler(s.serverFor, &mcp.StreamableHTTPOptions{
		Logger:       slog.New(slogHandler{log}),
		JSONResponse: true,
		// ServeHTTP has read the body within maxCallBody already; the
		// SDK's own limit (4 MiB by default) would refuse a large
		// resource_create that ours lets through.
		MaxRequestBodyBytes: maxCallBody,
	})
	// The SDK binds a session to the TokenInfo.UserID of the request that
	// opened it and refuses every later request (POST, GET, DELETE) with
	// another one; the only way in is its own middleware. ServeHTTP has
	// checked the token already, so the verifier only hands on its result.
	s.handler = auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		info, ok := ctx.Value(tokenInfoKey{}).(*auth.TokenInfo)
		if !ok {
			return nil, fmt.Errorf("%w: the token was not checked", auth.ErrInvalidToken)
		}
		return info, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(sdk)
	return s
}

type ctxKey struct{}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("WWW-Authenticate", `Bearer realm="agent-worker-mcp"`)
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprintf(w, "{\"error\":%q,\"code\":%q}\n", msg, api.CodeUnauthorized)
}

// serverFor returns the cached server of the request's identity. The SDK
// calls it on every request, so it must stay cheap.
func (s *Server) serverFor(r *http.Request) *mcp.Server {
	key, ok := r.Context().Value(ctxKey{}).(store.AgentKey)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	srv := s.servers[key]
	if srv == nil {
		srv = mcp.NewServer(&mcp.Implementation{Name: "agent-worker", Version: api.Version}, &mcp.ServerOptions{
			Instructions: "You are " + key.Name + ", a member of team " + key.Scope().String() +
				". Read my_inbox, do the work, talk with channel_send (@name mentions wake teammates), then my_inbox_ack.",
			Logger: slog.New(slogHandler{s.log}),
			InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
				s.fast.opened(key, req.Session)
			},
		})
		s.addTools(srv, key)
		s.servers[key] = srv
	}
	return srv
}

// Forget drops the cached server of an identity (when its agent is deleted).
func (s *Server) Forget(key store.AgentKey) {
	s.mu.Lock()
	delete(s.servers, key)
	delete(s.handlers, key)
	delete(s.renewed, key)
	delete(s.policies, key)
	s.mu.Unlock()
}

// tool registers a typed tool whose handler runs as me. It refuses a request
// whose token belongs to someone else (a session id used with another
// agent's token), turns errors into tool errors that say what to fix, and
// survives a panic. It uses the SDK's raw tool API: the arguments are
// checked once by decodeArgs and the result is not validated against its
// own schema, where the SDK's typed API would validate both on every call.
func tool[In, Out any](s *Server, srv *mcp.Server, me store.AgentKey, name, desc string,
	fn func(ctx context.Context, in In) (Out, string, error)) {
	args, result := schemaFor[In](), schemaFor[Out]()
	starts := telemetry.NewToolStart(name, me.Name) // the calls' execute_tool spans, built once
	handler := func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		start := time.Now()
		var span trace.Span // the call's execute_tool span, when tracing is on
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("tool panic", "tool", name, "agent", me.String(), "panic", p, "stack", string(debug.Stack()))
				err = fmt.Errorf("internal error in %s; the daemon logged it, try again or report it", name)
			}
			s.onTool(name, time.Since(start), err)
			if span != nil {
				if err != nil {
					span.SetStatus(codes.Error, err.Error())
				}
				span.End()
			}
			if err != nil { // a tool error the agent reads, not a protocol error
				res, err = toolErrorResult(err), nil
			}
		}()
		if req.Extra != nil {
			if req.Extra.Header.Get(identityHeader) != me.String() {
				return nil, errors.New("this MCP session belongs to another agent: open a new session with your own token")
			}
			ctx = context.WithValue(ctx, runKey{}, req.Extra.Header.Get(runHeader))
			if runOf(ctx) == "" {
				s.renewOutsideLeases(ctx, me) // a run's leases ride on its heartbeat
			}
		}
		ctx, span = s.toolSpan(ctx, starts)
		var in In
		if err := decodeArgs(req.Params.Arguments, args, &in); err != nil {
			return nil, api.Errorf(api.CodeInvalid, "%s: %w", name, err)
		}
		if err := s.checkPhase(ctx, me, name); err != nil {
			refused(span, "phase", err)
			return nil, err
		}
		if err := s.gate(ctx, me, name, req.Params.Arguments); err != nil {
			refused(span, "gate", err)
			return nil, s.toolError(name, me, err)
		}
		out, text, err := fn(ctx, in)
		if err != nil {
			return nil, s.toolError(name, me, err)
		}
		s.observeTool(ctx, me, name)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: out}, nil
	}
	srv.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: args.schema, OutputSchema: result.schema}, handler)
	if s.handlers == nil {
		s.handlers = map[store.AgentKey]map[string]mcp.ToolHandler{}
	}
	if s.handlers[me] == nil {
		s.handlers[me] = map[string]mcp.ToolHandler{}
	}
	s.handlers[me][name] = handler
}

// toolSpan starts a call's execute_tool span under its run's
// invoke_agent span (RunTrace): what the call sends joins the run's
// trace. Without Tracer it starts none (span nil).
func (s *Server) toolSpan(ctx context.Context, starts telemetry.ToolStart) (context.Context, trace.Span) {
	if s.Tracer == nil {
		return ctx, nil
	}
	id, parent := runOf(ctx), ""
	if id != "" && s.RunTrace != nil {
		parent = s.RunTrace(id)
	}
	ctx, span := starts.Start(ctx, s.Tracer, parent)
	if id != "" {
		span.SetAttributes(telemetry.RunIDKey.String(id))
	}
	return ctx, span
}

// refused records a refused call on its span, if it has one.
func refused(span trace.Span, by string, err error) {
	if span != nil {
		telemetry.Refused(span, by, err.Error())
	}
}

// toolErrorResult is a failed call as the agent sees it.
func toolErrorResult(err error) *mcp.CallToolResult {
	res := &mcp.CallToolResult{}
	res.SetError(err)
	return res
}

// toolError keeps messages meant for the caller and hides internal ones.
func (s *Server) toolError(name string, me store.AgentKey, err error) error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return err
	}
	s.log.Error("tool failed", "tool", name, "agent", me.String(), "error", err)
	return fmt.Errorf("internal error in %s; the daemon logged it, try again", name)
}
