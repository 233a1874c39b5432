package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// Client is a typed client of the daemon's HTTP API. Every method is one
// HTTP call; errors are *Error with the daemon's code, CodeUnreachable when
// no daemon answered, CodeUnavailable when one accepted the request but
// did not answer within HTTP.Timeout, or wrap the context's error when the
// caller gave up.
type Client struct {
	BaseURL string
	Token   string
	HTTP    *http.Client
}

// DefaultTimeout bounds a request that is not a stream or a run.
const DefaultTimeout = 60 * time.Second

// NewClient returns a client for the daemon described by d; over HTTPS
// it checks the daemon's certificate as ClientTLS says.
func NewClient(d DaemonInfo) *Client {
	return &Client{BaseURL: d.URL(), Token: d.Token, HTTP: newHTTPClient(d)}
}

// Health is GET /health.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	return h, c.do(ctx, http.MethodGet, "/health", nil, &h)
}

// Backup is POST /backup: the daemon writes a checked copy of its SQLite
// database to req.Path, on its own machine.
func (c *Client) Backup(ctx context.Context, req contract.BackupRequest) (contract.Backup, error) {
	var b contract.Backup
	return b, c.do(ctx, http.MethodPost, "/backup", req, &b)
}

// Shutdown is POST /shutdown: the daemon stops after answering.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/shutdown", nil, nil)
}

// ListAgents is GET /agents.
func (c *Client) ListAgents(ctx context.Context) ([]Agent, error) {
	var l AgentList
	return l.Agents, c.do(ctx, http.MethodGet, "/agents", nil, &l)
}

// CreateAgent is POST /agents.
func (c *Client) CreateAgent(ctx context.Context, s AgentSpec) (Agent, error) {
	var a Agent
	return a, c.do(ctx, http.MethodPost, "/agents", s, &a)
}

// GetAgent is GET /agents/{target}.
func (c *Client) GetAgent(ctx context.Context, t Target) (Agent, error) {
	var a Agent
	return a, c.do(ctx, http.MethodGet, "/agents/"+url.PathEscape(t.String()), nil, &a)
}

// DeleteAgent is DELETE /agents/{target}.
func (c *Client) DeleteAgent(ctx context.Context, t Target) error {
	return c.do(ctx, http.MethodDelete, "/agents/"+url.PathEscape(t.String()), nil, nil)
}

// ListWorkflows is GET /workflows.
func (c *Client) ListWorkflows(ctx context.Context) ([]Workflow, error) {
	var l WorkflowList
	return l.Workflows, c.do(ctx, http.MethodGet, "/workflows", nil, &l)
}

// GetWorkflow is GET /workflows/{name}/{tag}.
func (c *Client) GetWorkflow(ctx context.Context, t Target) (Workflow, error) {
	var w Workflow
	return w, c.do(ctx, http.MethodGet, workflowPath(t), nil, &w)
}

// AcceptWorkflow is POST /workflows/{name}/{tag}/accept: the edit of the
// workflow's file that waits because it widens what runs may do is
// applied; the answer is the workflow with it running.
func (c *Client) AcceptWorkflow(ctx context.Context, t Target) (Workflow, error) {
	var w Workflow
	return w, c.do(ctx, http.MethodPost, workflowPath(t)+"/accept", nil, &w)
}

// StopWorkflow is DELETE /workflows/{name}/{tag}: its agents stop after
// their current run, or at once with cancel.
func (c *Client) StopWorkflow(ctx context.Context, t Target, cancel bool) error {
	path := workflowPath(t)
	if cancel {
		path += "?cancel=true"
	}
	return c.do(ctx, http.MethodDelete, path, nil, nil)
}

// StartWorkflow is POST /workflows.
func (c *Client) StartWorkflow(ctx context.Context, req StartWorkflow) (Workflow, error) {
	var w Workflow
	return w, c.do(ctx, http.MethodPost, "/workflows", req, &w)
}

func workflowPath(t Target) string {
	return "/workflows/" + url.PathEscape(t.Workflow) + "/" + url.PathEscape(t.Tag)
}

// do sends one request with the client's timeout.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	return c.doWith(ctx, c.HTTP, method, path, in, out)
}

// doWith sends one request through hc. Connection failures are retried
// briefly (the daemon may be finishing its start-up); everything else is
// returned as is.
func (c *Client) doWith(ctx context.Context, hc *http.Client, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
	}
	var resp *http.Response
	for attempt := 0; ; attempt++ {
		var connected atomic.Bool // the daemon accepted the connection
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), method, c.BaseURL+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+c.Token)
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err = hc.Do(req)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
		if ue := (*url.Error)(nil); errors.As(err, &ue) && ue.Timeout() && connected.Load() {
			return Errorf(CodeUnavailable, "the daemon at %s accepted %s %s but did not answer within %s: it is busy or stuck; "+
				"the request may still take effect, so check (`agent-worker status`) before retrying", c.BaseURL, method, path, hc.Timeout)
		}
		if attempt >= 2 || !retryable(err) {
			return unreachable(c.BaseURL, err)
		}
		select {
		case <-time.After(time.Duration(100<<attempt) * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return decodeError(resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode %s %s response: %w", method, path, err)
	}
	return nil
}

// unreachable is the error for a request no daemon answered, or whose
// server the client refused (its TLS certificate).
func unreachable(baseURL string, err error) error {
	if terr := tlsError(baseURL, err); terr != nil {
		return terr
	}
	return Errorf(CodeUnreachable, "no daemon answered at %s (%v): start it with `agent-worker daemon` or check `agent-worker status`", baseURL, err)
}

func retryable(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e Error
	if json.Unmarshal(b, &e) == nil && e.Code != "" {
		return &e
	}
	return Errorf(CodeForStatus(resp.StatusCode), "daemon answered %s: %s", resp.Status, bytes.TrimSpace(b))
}

// Send is POST /send.
func (c *Client) Send(ctx context.Context, req SendRequest) (SentMessage, error) {
	var m SentMessage
	return m, c.do(ctx, http.MethodPost, "/send", req, &m)
}

// Peek is GET /peek: the last limit messages of target's channel (or those
// after sinceSeq).
func (c *Client) Peek(ctx context.Context, target string, limit int, sinceSeq int64) ([]Message, error) {
	var l MessageList
	return l.Messages, c.do(ctx, http.MethodGet, peekPath(target, limit, sinceSeq, false), nil, &l)
}

// FollowHandlers receive the events of a followed channel. A handler that
// returns ErrStopFollowing ends Follow without an error.
type FollowHandlers struct {
	Message  func(Message) error
	Run      func(kind string, r RunEventInfo) error // run_started, run_finished, run_failed
	State    func(AgentStateEvent) error
	Workflow func(contract.WorkflowEvent) error
	Tool     func(contract.ToolEvent) error
	// Idle is called when a workflow's team has finished its work.
	Idle func(Workflow) error
	// SinceSeq, when set, starts the stream after that seq instead of with
	// the last limit messages.
	SinceSeq int64
	// Connected is called once the daemon is streaming: from then on no
	// event is missed.
	Connected func()
}

// ErrStopFollowing, returned by a handler, ends Follow cleanly.
var ErrStopFollowing = errors.New("stop following")

// Follow is GET /peek?follow=true: the last limit messages of target's
// channel, then its live event stream (messages, runs, agent states) until
// ctx ends or the daemon closes the stream.
func (c *Client) Follow(ctx context.Context, target string, limit int, h FollowHandlers) error {
	resp, err := c.openStream(ctx, peekPath(target, limit, h.SinceSeq, true))
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer resp.Body.Close()
	if h.Connected != nil {
		h.Connected()
	}
	err = readSSE(resp.Body, func(event string, data []byte) error {
		switch {
		case event == "message" && h.Message != nil:
			var m Message
			if err := json.Unmarshal(data, &m); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			return h.Message(m)
		case strings.HasPrefix(event, "run_") && h.Run != nil:
			var r RunEventInfo
			if err := json.Unmarshal(data, &r); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			return h.Run(event, r)
		case event == "agent_state" && h.State != nil:
			var st AgentStateEvent
			if err := json.Unmarshal(data, &st); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			return h.State(st)
		case event == "tool" && h.Tool != nil:
			var te contract.ToolEvent
			if err := json.Unmarshal(data, &te); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			return h.Tool(te)
		case event == "workflow" && h.Workflow != nil:
			var we contract.WorkflowEvent
			if err := json.Unmarshal(data, &we); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			return h.Workflow(we)
		case event == "error":
			// The daemon ended the stream (e.g. the client fell behind).
			var e Error
			if err := json.Unmarshal(data, &e); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			return &e
		case event == "idle" && h.Idle != nil:
			var w Workflow
			if err := json.Unmarshal(data, &w); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			return h.Idle(w)
		}
		return nil
	})
	if ctx.Err() != nil || errors.Is(err, ErrStopFollowing) {
		return nil
	}
	return err
}

// openStream starts a GET of server-sent events at path, without the
// client's timeout; an answer other than success is returned as its error.
func (c *Client) openStream(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.stream().Do(req)
	if err != nil {
		return nil, unreachable(c.BaseURL, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

func peekPath(target string, limit int, since int64, follow bool) string {
	q := url.Values{}
	if target != "" {
		q.Set("target", target)
	}
	q.Set("limit", strconv.Itoa(limit))
	if since > 0 {
		q.Set("since_seq", strconv.FormatInt(since, 10))
	}
	if follow {
		q.Set("follow", "true")
	}
	return "/peek?" + q.Encode()
}

// readSSE calls fn for each server-sent event in r.
func readSSE(r io.Reader, fn func(event string, data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var event string
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				if err := fn(event, data); err != nil {
					return err
				}
			}
			event, data = "", nil
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(line[len("data:"):], " ")...)
		}
	}
	return sc.Err()
}

// DocList is GET /docs/{wf}/{tag}: the documents and who may change them.
func (c *Client) DocList(ctx context.Context, scope Target) (DocumentList, error) {
	var l DocumentList
	return l, c.do(ctx, http.MethodGet, docPath(scope, ""), nil, &l)
}

// DocRead is GET /docs/{wf}/{tag}/{path}.
func (c *Client) DocRead(ctx context.Context, scope Target, path string) (contract.Document, error) {
	var d contract.Document
	return d, c.do(ctx, http.MethodGet, docPath(scope, path), nil, &d)
}

// DocWrite is PUT /docs/{wf}/{tag}/{path}: replace, or create only.
func (c *Client) DocWrite(ctx context.Context, scope Target, path string, w DocumentWrite) error {
	return c.do(ctx, http.MethodPut, docPath(scope, path), w, nil)
}

// DocAppend is POST /docs/{wf}/{tag}/{path}.
func (c *Client) DocAppend(ctx context.Context, scope Target, path, content string) error {
	return c.do(ctx, http.MethodPost, docPath(scope, path), DocumentWrite{Content: content}, nil)
}

// Proposals is GET /proposals/{wf}/{tag}: the team's proposals with their
// votes, newest first; activeOnly leaves out the closed ones.
func (c *Client) Proposals(ctx context.Context, scope Target, activeOnly bool) ([]Proposal, error) {
	path := "/proposals/" + url.PathEscape(scope.Workflow) + "/" + url.PathEscape(scope.Tag)
	if activeOnly {
		path += "?active=true"
	}
	var l ProposalList
	return l.Proposals, c.do(ctx, http.MethodGet, path, nil, &l)
}

// Tasks is GET /tasks: the board of scope (a workflow target), oldest
// first; a non-empty state or assignee narrows it.
func (c *Client) Tasks(ctx context.Context, scope Target, state TaskState, assignee string) ([]Task, error) {
	q := url.Values{"target": {scope.Display()}}
	if state != "" {
		q.Set("state", string(state))
	}
	if assignee != "" {
		q.Set("assignee", assignee)
	}
	var l TaskList
	return l.Tasks, c.do(ctx, http.MethodGet, "/tasks?"+q.Encode(), nil, &l)
}

// CreateTask is POST /tasks: the user adds a task to a board.
func (c *Client) CreateTask(ctx context.Context, req TaskCreate) (Task, error) {
	var t Task
	return t, c.do(ctx, http.MethodPost, "/tasks", req, &t)
}

// CancelTask is POST /tasks/{id}/cancel: the task and its open subtasks
// become cancelled.
func (c *Client) CancelTask(ctx context.Context, id string, req TaskCancel) (Task, error) {
	var t Task
	return t, c.do(ctx, http.MethodPost, "/tasks/"+url.PathEscape(id)+"/cancel", req, &t)
}

// GetTask is GET /tasks/{id}: one task with its history. A non-zero scope
// checks that the task belongs to that board.
func (c *Client) GetTask(ctx context.Context, id string, scope *Target) (TaskDetail, error) {
	path := "/tasks/" + url.PathEscape(id)
	if scope != nil {
		path += "?" + url.Values{"target": {scope.Display()}}.Encode()
	}
	var d TaskDetail
	return d, c.do(ctx, http.MethodGet, path, nil, &d)
}

func docPath(scope Target, path string) string {
	p := "/docs/" + url.PathEscape(scope.Workflow) + "/" + url.PathEscape(scope.Tag)
	if path != "" {
		// One escaped segment, so ".." reaches the daemon's validation
		// instead of being resolved away by URL cleaning.
		p += "/" + url.PathEscape(path)
	}
	return p
}

// MCPConfig is POST /agents/{target}/mcp-config: it mints a token for an
// outside MCP client to act as the agent.
func (c *Client) MCPConfig(ctx context.Context, t Target) (MCPConfig, error) {
	var m MCPConfig
	return m, c.do(ctx, http.MethodPost, "/agents/"+url.PathEscape(t.String())+"/mcp-config", nil, &m)
}

// Plugins is GET /plugins.
func (c *Client) Plugins(ctx context.Context) (PluginList, error) {
	var l PluginList
	return l, c.do(ctx, http.MethodGet, "/plugins", nil, &l)
}

// Serve is POST /serve: run the agent on message and wait for its answer,
// however long the run takes (the daemon's run timeout bounds it).
// Cancelling ctx cancels the run.
func (c *Client) Serve(ctx context.Context, req RunRequest) (RunResult, error) {
	var r RunResult
	return r, c.doWith(ctx, c.stream(), http.MethodPost, "/serve", req, &r)
}

// stream is the client for answers that take as long as they take:
// streams and runs.
func (c *Client) stream() *http.Client { return &http.Client{Transport: c.HTTP.Transport} }

// RunHandlers receive the events of POST /run as they arrive.
type RunHandlers struct {
	Chunk func(RunChunk)
	Tool  func(RunTool)
}

// Run is POST /run: it streams the run's events to h and returns the
// result, or the run's error. Cancelling ctx cancels the run.
func (c *Client) Run(ctx context.Context, req RunRequest, h RunHandlers) (RunResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return RunResult{}, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/run", bytes.NewReader(body))
	if err != nil {
		return RunResult{}, err
	}
	hr.Header.Set("Authorization", "Bearer "+c.Token)
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.stream().Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return RunResult{}, fmt.Errorf("run: %w", ctx.Err())
		}
		return RunResult{}, unreachable(c.BaseURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return RunResult{}, decodeError(resp)
	}
	var res RunResult
	var runErr error
	done := false
	err = readSSE(resp.Body, func(event string, data []byte) error {
		switch event {
		case "chunk":
			var ch RunChunk
			if json.Unmarshal(data, &ch) == nil && h.Chunk != nil {
				h.Chunk(ch)
			}
		case "tool":
			var t RunTool
			if json.Unmarshal(data, &t) == nil && h.Tool != nil {
				h.Tool(t)
			}
		case "done":
			done = true
			return json.Unmarshal(data, &res)
		case "error":
			var e Error
			if err := json.Unmarshal(data, &e); err != nil {
				return err
			}
			done, runErr = true, &e
		}
		return nil
	})
	switch {
	case runErr != nil:
		return res, runErr
	case ctx.Err() != nil:
		return res, fmt.Errorf("run cancelled: %w", ctx.Err())
	case err != nil:
		return res, err
	case !done:
		return res, Errorf(CodeUnreachable, "the daemon closed the stream before the run finished: did it stop? check `agent-worker status`")
	}
	return res, nil
}

// ListRuns is GET /runs, newest first; agent "" lists every agent's runs.
func (c *Client) ListRuns(ctx context.Context, agent string) ([]Run, error) {
	return c.Runs(ctx, RunQuery{Target: agent})
}

// RunQuery narrows GET /runs.
type RunQuery struct {
	Target string // an agent or @wf[:tag]; "" for all
	Failed bool   // only failed, cancelled and timed-out runs
	Limit  int    // 0: the daemon's default (20)
}

// Runs is GET /runs, newest first.
func (c *Client) Runs(ctx context.Context, q RunQuery) ([]Run, error) {
	v := url.Values{}
	if q.Target != "" {
		v.Set("target", q.Target)
	}
	if q.Failed {
		v.Set("failed", "true")
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var l RunList
	return l.Runs, c.do(ctx, http.MethodGet, "/runs?"+v.Encode(), nil, &l)
}

// FollowRun is GET /runs/{id}/events?follow=true: onStart gets the run as
// it was when the stream began, onEvent its stored transcript, then each
// new entry while the run goes on; FollowRun returns the run as it ended.
// A finished run's transcript is all there is, and FollowRun returns once
// it is read.
func (c *Client) FollowRun(ctx context.Context, id string, onStart func(Run), onEvent func(RunEvent) error) (Run, error) {
	resp, err := c.openStream(ctx, "/runs/"+url.PathEscape(id)+"/events?follow=true")
	if err != nil {
		if ctx.Err() != nil {
			return Run{}, ctx.Err()
		}
		return Run{}, err
	}
	defer resp.Body.Close()
	var run Run
	ended := false
	err = readSSE(resp.Body, func(event string, data []byte) error {
		switch event {
		case "run":
			var r Run
			if err := json.Unmarshal(data, &r); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			onStart(r)
		case "event":
			var e RunEvent
			if err := json.Unmarshal(data, &e); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			return onEvent(e)
		case "end":
			ended = true
			return json.Unmarshal(data, &run)
		case "error":
			var e Error
			if err := json.Unmarshal(data, &e); err != nil {
				return fmt.Errorf("decode event: %w", err)
			}
			return &e
		}
		return nil
	})
	switch {
	case ctx.Err() != nil:
		return run, ctx.Err()
	case err != nil:
		return run, err
	case !ended:
		return run, Errorf(CodeUnreachable, "the daemon closed the stream before the run ended: did it stop? check `agent-worker status`")
	}
	return run, nil
}

// GetRun is GET /runs/{id}: a run with its transcript.
func (c *Client) GetRun(ctx context.Context, id string) (contract.RunDetail, error) {
	var d contract.RunDetail
	return d, c.do(ctx, http.MethodGet, "/runs/"+url.PathEscape(id), nil, &d)
}

// Resume is POST /agents/{target}/resume, or for a workflow target
// (@wf:tag) POST /workflows/{wf}/{tag}/resume: a paused, failed or
// over-budget agent (every one of the workflow's) runs its unread messages
// again.
func (c *Client) Resume(ctx context.Context, t Target) error {
	return c.do(ctx, http.MethodPost, controlPath(t, "resume"), nil, nil)
}

// Pause is POST /agents/{target}/pause, or for a workflow target
// POST /workflows/{wf}/{tag}/pause: no new run starts until Resume.
func (c *Client) Pause(ctx context.Context, t Target) error {
	return c.do(ctx, http.MethodPost, controlPath(t, "pause"), nil, nil)
}

// CancelAgent is POST /agents/{target}/cancel: the agent's run in flight
// ends, recorded cancelled, its inbox unread.
func (c *Client) CancelAgent(ctx context.Context, t Target) (Cancelled, error) {
	var out Cancelled
	return out, c.do(ctx, http.MethodPost, controlPath(t, "cancel"), nil, &out)
}

// CancelRun is POST /runs/{id}/cancel.
func (c *Client) CancelRun(ctx context.Context, id string) (Cancelled, error) {
	var out Cancelled
	return out, c.do(ctx, http.MethodPost, "/runs/"+url.PathEscape(id)+"/cancel", nil, &out)
}

// controlPath is the route of a control action on an agent, or on a
// workflow:tag when the target names no agent.
func controlPath(t Target, action string) string {
	if t.Agent == "" {
		return "/workflows/" + url.PathEscape(t.Workflow) + "/" + url.PathEscape(t.Tag) + "/" + action
	}
	return "/agents/" + url.PathEscape(t.String()) + "/" + action
}

// Reset is POST /agents/{target}/reset: the agent forgets its
// conversation, so its next run starts fresh.
func (c *Client) Reset(ctx context.Context, t Target) (contract.Reset, error) {
	var r contract.Reset
	return r, c.do(ctx, http.MethodPost, "/agents/"+url.PathEscape(t.String())+"/reset", nil, &r)
}

// SetSchedule is PUT /agents/{target}/schedule.
func (c *Client) SetSchedule(ctx context.Context, t Target, s ScheduleRequest) error {
	return c.do(ctx, http.MethodPut, "/agents/"+url.PathEscape(t.String())+"/schedule", s, nil)
}

// ClearSchedule is DELETE /agents/{target}/schedule.
func (c *Client) ClearSchedule(ctx context.Context, t Target) error {
	return c.do(ctx, http.MethodDelete, "/agents/"+url.PathEscape(t.String())+"/schedule", nil, nil)
}

// SetBudget is PUT /budgets/{target}; t is an agent or a scope (@wf:tag).
func (c *Client) SetBudget(ctx context.Context, t Target, b BudgetRequest) error {
	return c.do(ctx, http.MethodPut, "/budgets/"+url.PathEscape(t.String()), b, nil)
}

// ClearBudget is DELETE /budgets/{target}.
func (c *Client) ClearBudget(ctx context.Context, t Target) error {
	return c.do(ctx, http.MethodDelete, "/budgets/"+url.PathEscape(t.String()), nil, nil)
}

// Worktrees is GET /worktrees: the agents' git worktrees of target
// (@wf[:tag], or one agent), or of every workflow with a git workspace
// when target is "".
func (c *Client) Worktrees(ctx context.Context, target string) ([]Worktree, error) {
	path := "/worktrees"
	if target != "" {
		path += "?" + url.Values{"target": {target}}.Encode()
	}
	var l WorktreeList
	return l.Worktrees, c.do(ctx, http.MethodGet, path, nil, &l)
}

// Integrate is POST /worktrees/{agent}/integrate: merge the agent's branch
// into req.Target (the workspace's base when empty).
func (c *Client) Integrate(ctx context.Context, agent Target, req IntegrateRequest) (IntegrateResult, error) {
	var res IntegrateResult
	return res, c.do(ctx, http.MethodPost, "/worktrees/"+url.PathEscape(agent.String())+"/integrate", req, &res)
}

// Discard is POST /worktrees/{agent}/discard: remove the agent's worktree
// and delete its branch.
func (c *Client) Discard(ctx context.Context, agent Target, req contract.DiscardRequest) (DiscardResult, error) {
	var res DiscardResult
	return res, c.do(ctx, http.MethodPost, "/worktrees/"+url.PathEscape(agent.String())+"/discard", req, &res)
}

// Skills is GET /skills: the skills the agents of target (@wf[:tag];
// "": no workflow) find, looked for afresh.
func (c *Client) Skills(ctx context.Context, target string) (SkillList, error) {
	path := "/skills"
	if target != "" {
		path += "?" + url.Values{"target": {target}}.Encode()
	}
	var l SkillList
	return l, c.do(ctx, http.MethodGet, path, nil, &l)
}

// EffortStart is POST /efforts: start an effort for req.Agent.
func (c *Client) EffortStart(ctx context.Context, req EffortStartRequest) (tools.EffortResult, error) {
	var res tools.EffortResult
	return res, c.do(ctx, http.MethodPost, "/efforts", req, &res)
}

// EffortNext is POST /efforts/next: the agent's effort leaves its phase.
func (c *Client) EffortNext(ctx context.Context, req EffortNextRequest) (tools.EffortResult, error) {
	var res tools.EffortResult
	return res, c.do(ctx, http.MethodPost, "/efforts/next", req, &res)
}

// EffortLog is POST /efforts/log.
func (c *Client) EffortLog(ctx context.Context, req EffortLogRequest) (tools.EffortResult, error) {
	var res tools.EffortResult
	return res, c.do(ctx, http.MethodPost, "/efforts/log", req, &res)
}

// EffortFinish is POST /efforts/finish.
func (c *Client) EffortFinish(ctx context.Context, req EffortFinishRequest) (tools.EffortResult, error) {
	var res tools.EffortResult
	return res, c.do(ctx, http.MethodPost, "/efforts/finish", req, &res)
}

// Efforts is GET /efforts: the fleet view, of dir or target (@wf[:tag]),
// ended efforts too with all.
func (c *Client) Efforts(ctx context.Context, dir, target string, all bool) (EffortList, error) {
	q := url.Values{}
	if dir != "" {
		q.Set("dir", dir)
	}
	if target != "" {
		q.Set("target", target)
	}
	if all {
		q.Set("all", "1")
	}
	path := "/efforts"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l EffortList
	return l, c.do(ctx, http.MethodGet, path, nil, &l)
}

// EffortShow is GET /efforts/{id}, or with id "" and agent the agent's
// current (else latest) effort: GET /efforts/-?agent=.
func (c *Client) EffortShow(ctx context.Context, id, agent string) (EffortShow, error) {
	if id == "" {
		id = "-"
	}
	path := "/efforts/" + url.PathEscape(id)
	if agent != "" {
		path += "?" + url.Values{"agent": {agent}}.Encode()
	}
	var s EffortShow
	return s, c.do(ctx, http.MethodGet, path, nil, &s)
}

// EffortArtifact is GET /efforts/{id}/artifacts/{name}: one of the
// effort's files in its directory.
func (c *Client) EffortArtifact(ctx context.Context, id, name string) (EffortArtifactFile, error) {
	var f EffortArtifactFile
	return f, c.do(ctx, http.MethodGet, "/efforts/"+url.PathEscape(id)+"/artifacts/"+url.PathEscape(name), nil, &f)
}
