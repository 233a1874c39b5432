package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// ask parses target and runs message through the scheduler (Scheduler.Ask).
func (h *Server) ask(ctx context.Context, target, message string, onEvent func(backend.Event)) (api.RunResult, error) {
	t, err := api.ParseAgentTarget(target)
	if err != nil {
		return api.RunResult{}, err
	}
	return h.sched.Ask(ctx, t, message, onEvent)
}

// handleRun is POST /run: the run's events as server-sent events (`chunk`,
// `tool`, then `done` or `error`). Closing the request cancels the run.
func (h *Server) handleRun(w http.ResponseWriter, r *http.Request) error {
	var req api.RunRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if _, err := api.ParseAgentTarget(req.Agent); err != nil {
		return err
	}
	sse, err := startSSE(w)
	if err != nil {
		return err
	}
	streamed := false
	res, err := h.ask(r.Context(), req.Agent, req.Message, func(e backend.Event) {
		switch e.Kind {
		case backend.EventText:
			streamed = true
			sse.send("chunk", api.RunChunk{Agent: req.Agent, Text: e.Text})
		case backend.EventToolCall, backend.EventToolResult:
			if e.Tool != nil {
				sse.send("tool", api.RunTool{Name: e.Tool.Name, Args: e.Tool.Args, Result: e.Tool.Result,
					IsError: e.Tool.IsError, Done: e.Kind == backend.EventToolResult})
			}
		}
	})
	if err != nil {
		ae := toAPIError(err)
		if ae == nil {
			ae = &api.Error{Code: api.CodeInternal, Message: err.Error()}
		}
		sse.send("error", ae)
		return nil
	}
	if !streamed && len(res.Replies) == 0 && res.Content != "" {
		sse.send("chunk", api.RunChunk{Agent: req.Agent, Text: res.Content})
	}
	sse.send("done", res)
	return nil
}

// handleServe is POST /serve: the same run, answered as one JSON object.
func (h *Server) handleServe(w http.ResponseWriter, r *http.Request) error {
	var req api.RunRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	res, err := h.ask(r.Context(), req.Agent, req.Message, nil)
	if err != nil {
		return runError(err)
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// runError keeps classified errors and reports a failed run as such, with
// its reason, instead of an anonymous internal error.
func runError(err error) error {
	if toAPIError(err) != nil {
		return err
	}
	return api.Errorf(api.CodeInternal, "run failed: %w", err)
}

// handlePlugins answers from the catalog's last results; Refresh only
// re-asks healthy plugins, bounded, never a broken binary.
func (h *Server) handlePlugins(w http.ResponseWriter, r *http.Request) error {
	h.catalog.Refresh(r.Context())
	writeJSON(w, http.StatusOK, api.PluginList{Dirs: h.catalog.Dirs(), Plugins: h.plugins()})
	return nil
}

// plugins lists the catalog's plugins, each backend in use with its warm
// spare counters.
func (h *Server) plugins() []api.Plugin {
	ps := h.catalog.List()
	stats := h.runs.SpareStats()
	for i, p := range ps {
		if st, ok := stats[p.Name]; ok && p.Kind == "backend" && !p.Shadowed {
			ps[i].Spares = &st
		}
	}
	return ps
}

// handleListRuns is GET /runs: newest first, narrowed by target (an agent
// or @wf[:tag]; agent= is the older name), failed=true (failed, cancelled
// and timed out) and limit.
func (h *Server) handleListRuns(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var f store.RunFilter
	target := q.Get("target")
	if target == "" {
		target = q.Get("agent")
	}
	if target != "" {
		t, err := api.ParseTarget(target)
		if err != nil {
			return err
		}
		if t.IsScope() {
			f.Scope = scopeOf(t)
		} else {
			f.Agent = keyOf(t)
		}
	}
	switch v := q.Get("failed"); v {
	case "", "false":
	case "true":
		f.Unsuccessful = true
	default:
		return api.Errorf(api.CodeInvalid, "failed=%q: use failed=true or leave it out", v)
	}
	n, err := intParam(q.Get("limit"), 20)
	if err != nil {
		return err
	}
	f.Limit = n
	runs, err := h.db.ListRuns(r.Context(), f)
	if err != nil {
		return err
	}
	out := api.RunList{Runs: []api.Run{}}
	for _, run := range runs {
		out.Runs = append(out.Runs, apiRun(run))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *Server) handleGetRun(w http.ResponseWriter, r *http.Request) error {
	run, events, err := h.db.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := contract.RunDetail{Run: apiRun(run), Events: []api.RunEvent{}}
	for _, e := range events {
		out.Events = append(out.Events, apiRunEvent(e))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// handleRunEvents is GET /runs/{id}/events: the run's transcript as
// server-sent events: `run` with the run as it is, one `event` per entry,
// then `end` with the run. With
// follow=true and a run in flight, new entries follow as they are stored
// and `end` comes when the run's end is recorded.
func (h *Server) handleRunEvents(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	follow := r.URL.Query().Get("follow") == "true"
	// Watch before reading, so nothing stored in between is missed.
	changed, ended, stop, live := h.runs.WatchRun(id)
	defer stop()
	run, events, err := h.db.GetRun(r.Context(), id)
	if err != nil {
		return err
	}
	sse, err := startSSE(w)
	if err != nil {
		return err
	}
	sse.send("run", apiRun(run))
	last := 0
	send := func(events []store.RunEvent) {
		for _, e := range events {
			sse.send("event", apiRunEvent(e))
			last = e.N
		}
	}
	send(events)
	if follow && live {
		for done := false; !done; {
			select {
			case <-r.Context().Done():
				return nil
			case <-h.stop:
				sse.send("error", api.Errorf(api.CodeUnavailable, "the daemon is stopping; the run's transcript stays in `agent-worker logs %s`", id))
				return nil
			case <-changed:
			case <-ended:
				done = true
			}
			if run, events, err = h.db.RunSince(r.Context(), id, last); err != nil {
				sse.send("error", toWireError(err))
				return nil
			}
			send(events)
		}
	}
	sse.send("end", apiRun(run))
	return nil
}

// toWireError is err as an SSE error event carries it.
func toWireError(err error) *api.Error {
	if ae := toAPIError(err); ae != nil {
		return ae
	}
	return api.Errorf(api.CodeInternal, "internal error in the daemon: see its log for details")
}

func apiRunEvent(e store.RunEvent) api.RunEvent {
	return api.RunEvent{N: e.N, Kind: e.Kind, Data: json.RawMessage(e.Data), At: e.At}
}

func apiRun(r store.Run) api.Run {
	out := api.Run{ID: r.ID, Agent: targetOf(r.Agent).Display(), Backend: r.Backend, PluginSHA256: r.PluginSHA256, Daemon: r.Daemon,
		Attempt: r.Attempt, State: r.State, StartedAt: r.StartedAt, InboxUntilSeq: r.InboxUntilSeq, Error: r.Error, Usage: r.Usage,
		Scope: r.Agent.Workflow + ":" + r.Agent.Tag, TraceID: traceID(r.Traceparent)}
	if !r.EndedAt.IsZero() {
		end := r.EndedAt
		out.EndedAt = &end
		out.DurationMS = end.Sub(r.StartedAt).Milliseconds()
	}
	u := store.ParseUsage(r.Usage)
	out.Model, out.InputTokens, out.OutputTokens, out.CostSource = u.Model, u.InputTokens, u.OutputTokens, u.CostSource
	if u.CostKnown() && !r.EndedAt.IsZero() {
		cost := u.CostUSD
		out.CostUSD = &cost
	}
	return out
}

// traceID is the trace-id field of a W3C traceparent
// (version-traceid-spanid-flags), "" for none.
func traceID(traceparent string) string {
	if parts := strings.Split(traceparent, "-"); len(parts) == 4 && len(parts[1]) == 32 {
		return parts[1]
	}
	return ""
}

// apiSpend is a RunStats total in its wire form.
func apiSpend(s store.RunStats) *api.Spend {
	return &api.Spend{Runs: s.Runs, FailedRuns: s.Failed, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
		CostUSD: s.CostUSD, UnpricedRuns: s.Unpriced}
}

// sseWriter writes server-sent events and flushes each one.
type sseWriter struct {
	w  http.ResponseWriter
	fl http.Flusher
}

func startSSE(w http.ResponseWriter) (*sseWriter, error) {
	fl, ok := w.(http.Flusher)
	if !ok {
		return nil, fmt.Errorf("streaming unsupported by the response writer")
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	return &sseWriter{w: w, fl: fl}, nil
}

func (s *sseWriter) comment(text string) {
	fmt.Fprintf(s.w, ": %s\n\n", text)
	s.fl.Flush()
}

func (s *sseWriter) send(event string, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, b)
	s.fl.Flush()
}
