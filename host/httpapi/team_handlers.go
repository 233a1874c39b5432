package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// handleSend writes a human's message into a channel. An agent target gets
// an @mention so the message lands in that agent's inbox.
func (h *Server) handleSend(w http.ResponseWriter, r *http.Request) error {
	var req api.SendRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	t, err := api.ParseTarget(req.Target)
	if err != nil {
		return err
	}
	content := req.Message
	if !t.IsScope() {
		if _, err := h.db.GetAgent(r.Context(), keyOf(t)); err != nil {
			return err
		}
		content = "@" + t.Agent + " " + content
	}
	m, err := h.team.Send(r.Context(), team.SendRequest{Scope: scopeOf(t), From: team.SenderUser, Content: content, To: req.To})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, api.SentMessage{Message: team.APIMessage(m), Warnings: h.team.SendWarnings(r.Context(), m)})
	return nil
}

// handlePeek shows a channel: a scope target as the human operator sees it
// (direct messages included, marked by `to`), an agent target as that agent
// sees it. With follow=true it streams new messages as server-sent events.
func (h *Server) handlePeek(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	target := q.Get("target")
	if target == "" {
		target = "@" + api.GlobalWorkflow
	}
	t, err := api.ParseTarget(target)
	if err != nil {
		return err
	}
	viewer := t.Agent
	limit, err := intParam(q.Get("limit"), 10)
	if err != nil {
		return err
	}
	since, err := intParam(q.Get("since_seq"), 0)
	if err != nil {
		return err
	}
	if viewer != "" {
		if _, err := h.db.GetAgent(r.Context(), keyOf(t)); err != nil {
			return err
		}
	}
	follow := q.Get("follow") == "true"
	start := int64(since)
	if follow && since == 0 {
		// Where "now" is, taken before the tail is read, so a message
		// written between the two is streamed rather than skipped.
		if start, err = h.db.LatestSeq(r.Context(), scopeOf(t)); err != nil {
			start = 0
		}
	}
	ms, err := h.team.Read(r.Context(), scopeOf(t), viewer, int64(since), limit)
	if follow && t.IsScope() && api.ErrorCode(err) == api.CodeNotFound {
		ms, err = nil, nil // a workflow about to start: follow it from its first line
	}
	if err != nil {
		return err
	}
	if !follow {
		writeJSON(w, http.StatusOK, api.MessageList{Messages: team.APIMessages(ms)})
		return nil
	}
	scope := scopeOf(t)
	return h.streamEvents(w, r, &scope, viewer, ms, start)
}

// handleEvents is GET /events: server-sent events of everything that
// happens (messages, run started/finished/failed, agent state changes),
// optionally limited to one target's scope. Messages of a scope are read
// from the store after the last seq sent, so a slow reader loses none.
func (h *Server) handleEvents(w http.ResponseWriter, r *http.Request) error {
	var scope *store.Scope
	viewer := ""
	if target := r.URL.Query().Get("target"); target != "" {
		t, err := api.ParseTarget(target)
		if err != nil {
			return err
		}
		if _, err := h.db.GetWorkflow(r.Context(), t.Workflow, t.Tag); err != nil {
			return err
		}
		s := scopeOf(t)
		scope, viewer = &s, t.Agent
	}
	since, err := intParam(r.URL.Query().Get("since_seq"), 0)
	if err != nil {
		return err
	}
	from := int64(since)
	if since == 0 {
		from = fromNow
	}
	return h.streamEvents(w, r, scope, viewer, nil, from)
}

// StreamQueue is how many events an event stream may have unsent before
// the bus drops it: the client stopped reading.
const StreamQueue = 1024

// fromNow as a stream's start means: only messages written from now on.
const fromNow = -1

// streamEvents writes bus events as SSE until the client or the daemon
// goes away, after first sending the messages in first. Messages of the
// scope are streamed from seq since on (fromNow: from the newest one).
func (h *Server) streamEvents(w http.ResponseWriter, r *http.Request, scope *store.Scope, viewer string, first []store.Message, since int64) error {
	sub := h.team.Bus.Subscribe(StreamQueue)
	defer sub.Close()
	st := &eventStream{h: h, ctx: context.WithoutCancel(r.Context()), scope: scope, viewer: viewer, last: since}
	// A workflow's stream says when its team has finished (`run` waits for
	// that). The first check is made before the stream is announced: a
	// client that starts the workflow once connected must not meet a check
	// that sees the workflow half set up.
	now, idle := st.idleNow()
	var err error
	if st.sse, err = startSSE(w); err != nil {
		return err
	}
	st.wasIdle = idle
	if idle {
		st.sse.send("idle", now)
	}
	if st.last == fromNow {
		// Start after what exists now (read after subscribing, so nothing
		// later is missed), so old history is not replayed.
		st.last = 0
		if scope != nil {
			if seq, err := h.db.LatestSeq(r.Context(), *scope); err == nil {
				st.last = seq
			}
		}
	}
	st.sendMessages(first)
	// Catch up on what was written before the subscription began. A
	// workflow about to start has none yet.
	if !st.catchUp(true) {
		return nil
	}
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-h.stop:
			return nil
		case <-ping.C:
			st.sse.comment("ping")
			if scope != nil { // a safety net after dropped events
				if !st.catchUp(false) {
					return nil
				}
				st.checkIdle()
			}
		case ev := <-sub.C:
			if !st.forward(ev) {
				return nil
			}
		case <-sub.Dropped():
			// The client stopped reading long enough for its queue to
			// fill: end the stream, saying where to pick up.
			how := "reconnect"
			if scope != nil {
				how = fmt.Sprintf("reconnect with since_seq=%d", st.last)
			}
			st.sse.send("error", api.Errorf(api.CodeUnavailable, "you fell behind the event stream and were dropped; %s", how))
			return nil
		}
	}
}

// eventStream is one client's event stream: what it has been sent (the
// last message seq) and whether its workflow was last seen idle. Only the
// streaming handler's goroutine uses it.
type eventStream struct {
	h       *Server
	ctx     context.Context // the request's values, never cancelled mid-read
	sse     *sseWriter
	scope   *store.Scope // nil: every scope, message events only as they come
	viewer  string
	last    int64
	wasIdle bool
}

// idleNow reports the workflow with its progress and whether its team has
// finished; never for the standalone agents' scope or an unscoped stream.
func (st *eventStream) idleNow() (api.Workflow, bool) {
	if st.scope == nil || st.scope.Workflow == api.GlobalWorkflow {
		return api.Workflow{}, false
	}
	// The whole view (every agent, spend, budget) only once the team
	// looks done: this runs on every event of a busy team.
	if idle, err := st.h.wfs.Idle(st.ctx, *st.scope); err != nil || !idle {
		return api.Workflow{}, false
	}
	out, err := st.h.apiWorkflow(st.ctx, *st.scope, true)
	if err != nil || out.Progress == nil {
		return api.Workflow{}, false
	}
	return out, out.State == api.WorkflowRunning && out.Progress.Idle
}

// checkIdle runs when something that could end the work happens, and
// sends `idle` when the team has just finished. The messages written
// before the team was seen idle are sent first: the event that woke this
// check may be older than the team's last message (another agent's state
// change, still queued behind it), and a client that stops at `idle`
// (`run`) must have seen everything the team said.
func (st *eventStream) checkIdle() {
	out, idle := st.idleNow()
	if idle && !st.wasIdle {
		if !st.catchUp(false) {
			return
		}
		st.sse.send("idle", out)
	}
	st.wasIdle = idle
}

func (st *eventStream) sendMessages(ms []store.Message) {
	for _, m := range ms {
		st.sse.send("message", team.APIMessage(m))
		st.last = m.Seq
	}
}

// catchUp sends the scope's messages after the last one sent. It reports
// false when the stream must end; at the start (first) a scope with no
// workflow yet is no reason to end.
func (st *eventStream) catchUp(first bool) bool {
	if st.scope == nil {
		return true
	}
	ms, err := st.h.team.Read(st.ctx, *st.scope, st.viewer, st.last, 1000)
	if err != nil && !(first && api.ErrorCode(err) == api.CodeNotFound) {
		st.h.log.Warn("event stream", "error", err)
		return false
	}
	st.sendMessages(ms)
	return true
}

// forward sends what a bus event means to this client, if anything. It
// reports false when the stream must end.
func (st *eventStream) forward(ev team.Event) bool {
	inScope := st.scope == nil || (ev.Agent.Workflow == st.scope.Workflow && ev.Agent.Tag == st.scope.Tag)
	switch {
	case ev.Kind == team.EventMessage && st.scope != nil:
		if m := ev.Message; m != nil && (m.Workflow != st.scope.Workflow || m.Tag != st.scope.Tag || m.Seq <= st.last) {
			return true
		}
		if !st.catchUp(false) {
			return false
		}
		st.checkIdle() // a proposal may have closed
	case ev.Kind == team.EventMessage:
		st.sendMessages([]store.Message{*ev.Message})
	case ev.Kind == team.EventWake:
		// internal: the scheduler's business
	case !inScope:
	case ev.Kind == team.EventTool:
		st.sse.send(ev.Kind, contract.ToolEvent{Agent: targetOf(ev.Agent).Display(), Name: ev.Tool.Name, Args: ev.Tool.Args})
	case ev.Kind == team.EventWorkflow:
		st.sse.send(ev.Kind, contract.WorkflowEvent{Target: api.Target{Workflow: ev.Agent.Workflow, Tag: ev.Agent.Tag}.Display(),
			Change: ev.State, Error: ev.Error})
		st.checkIdle() // a start with nothing to do is done at once
	case ev.Run != nil:
		st.sse.send(ev.Kind, api.RunEventInfo{Agent: targetOf(ev.Agent).Display(), RunID: ev.Run.ID,
			Attempt: ev.Run.Attempt, Error: ev.Run.Error, DurationMS: ev.Run.DurationMS})
	case ev.Kind == team.EventGate && ev.Tool != nil:
		st.sse.send(ev.Kind, api.GateEvent{Agent: targetOf(ev.Agent).Display(), Session: ev.State, Tool: ev.Tool.Name, Reason: ev.Error})
	case ev.Kind == team.EventEffort:
		id, change, _ := strings.Cut(ev.State, " ")
		st.sse.send(ev.Kind, api.EffortEvent{Agent: targetOf(ev.Agent).Display(), Effort: id, Change: change})
	case ev.Kind == team.EventAgentState:
		st.sse.send(ev.Kind, api.AgentStateEvent{Agent: targetOf(ev.Agent).Display(), State: api.AgentState(ev.State), Error: ev.Error})
		st.checkIdle()
	}
	return true
}

func intParam(s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, api.Errorf(api.CodeInvalid, "%q is not a non-negative number", s)
	}
	return n, nil
}

func (h *Server) handleMCPConfig(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	token, err := h.db.CreateToken(r.Context(), keyOf(t), "")
	if api.ErrorCode(err) == api.CodeNotFound {
		// An MCP config is for an outside client acting as the agent: the
		// kind of agent it needs is known, so say how to make it.
		return api.Errorf(api.CodeNotFound, "no agent %[1]s: create it for your MCP client with `agent-worker new %[1]s --backend external`, then run mcp-config again (`agent-worker list` shows the agents there are)", t.Display())
	}
	if err != nil {
		return err
	}
	h.log.Named("mcp").Info("agent token minted", "agent", t.String())
	info := h.info()
	writeJSON(w, http.StatusCreated, api.MCPConfig{Agent: t.Display(), URL: info.URL() + "/mcp", Token: token, TLS: info.TLS})
	return nil
}

// docScope reads {wf}/{tag} from the path (documents and proposals).
func docScope(r *http.Request) (store.Scope, error) {
	t, err := api.ParseTarget("@" + r.PathValue("wf") + ":" + r.PathValue("tag"))
	return scopeOf(t), err
}

func (h *Server) handleDocList(w http.ResponseWriter, r *http.Request) error {
	scope, err := docScope(r)
	if err != nil {
		return err
	}
	wf, err := h.db.GetWorkflow(r.Context(), scope.Workflow, scope.Tag)
	if err != nil {
		return err
	}
	docs, err := h.team.DocList(r.Context(), scope)
	if err != nil {
		return err
	}
	out := api.DocumentList{Documents: []api.DocumentInfo{}, Owner: wf.DocsOwner}
	for _, d := range docs {
		out.Documents = append(out.Documents, api.DocumentInfo{Path: d.Path, Size: d.Size, UpdatedAt: d.UpdatedAt})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *Server) handleDocRead(w http.ResponseWriter, r *http.Request) error {
	scope, err := docScope(r)
	if err != nil {
		return err
	}
	path := r.PathValue("path")
	content, err := h.team.DocRead(r.Context(), scope, path)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contract.Document{Path: path, Content: content})
	return nil
}

func (h *Server) handleDocWrite(w http.ResponseWriter, r *http.Request) error {
	return h.docChange(w, r, func(ctx context.Context, scope store.Scope, path string, body api.DocumentWrite) error {
		if body.Create {
			return h.team.DocCreate(ctx, scope, team.SenderUser, path, body.Content)
		}
		return h.team.DocWrite(ctx, scope, team.SenderUser, path, body.Content)
	})
}

func (h *Server) handleDocAppend(w http.ResponseWriter, r *http.Request) error {
	return h.docChange(w, r, func(ctx context.Context, scope store.Scope, path string, body api.DocumentWrite) error {
		if body.Create {
			return api.Errorf(api.CodeInvalid, "create applies to PUT (write), not to POST (append)")
		}
		return h.team.DocAppend(ctx, scope, team.SenderUser, path, body.Content)
	})
}

func (h *Server) docChange(w http.ResponseWriter, r *http.Request, do func(context.Context, store.Scope, string, api.DocumentWrite) error) error {
	scope, err := docScope(r)
	if err != nil {
		return err
	}
	var body api.DocumentWrite
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	path := r.PathValue("path")
	if err := do(r.Context(), scope, path, body); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Status{Status: "ok", Target: scope.String() + "/" + path})
	return nil
}

// handleProposals is GET /proposals/{wf}/{tag}: the team's proposals,
// newest first, each with its votes; active=true keeps the open ones.
func (h *Server) handleProposals(w http.ResponseWriter, r *http.Request) error {
	scope, err := docScope(r)
	if err != nil {
		return err
	}
	var active bool
	switch v := r.URL.Query().Get("active"); v {
	case "", "false":
	case "true":
		active = true
	default:
		return api.Errorf(api.CodeInvalid, "active=%q: use active=true or leave it out", v)
	}
	// The store lists no proposals for a workflow it does not know; say
	// that it is unknown, as every other scope route does.
	if _, err := h.db.GetWorkflow(r.Context(), scope.Workflow, scope.Tag); err != nil {
		return err
	}
	ps, err := h.team.Proposals(r.Context(), scope, active)
	if err != nil {
		return err
	}
	out := api.ProposalList{Proposals: []api.Proposal{}}
	for _, p := range ps {
		out.Proposals = append(out.Proposals, team.APIProposal(p))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func scopeOf(t api.Target) store.Scope { return store.Scope{Workflow: t.Workflow, Tag: t.Tag} }
