package console

import (
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
)

// views are the console's pages, each built from API calls.
type views struct {
	s     *Server
	api   *api.Client
	inner http.Handler
}

// Page sizes.
const (
	channelShown = 200 // messages on a team page
	queueShown   = 20  // merge queue entries on a team page
	runsShown    = 50  // runs on the runs page, unless ?limit=
	costRuns     = 5000
	foldChars    = 800 // a longer message is folded
)

// teamRow is one workflow:tag on the overview.
type teamRow struct {
	api.Workflow
	Running  int
	Failed   []string
	Last     *api.Message
	Standard bool // not the global workflow of standalone agents
}

func (v *views) overview(w http.ResponseWriter, r *http.Request, ss session) error {
	ctx := r.Context()
	h, err := v.api.Health(ctx) // workflows with spend and budget, agents, workers, problems
	if err != nil {
		return err
	}
	rows := make([]teamRow, 0, len(h.Workflows))
	for _, wf := range h.Workflows {
		row := teamRow{Workflow: wf, Standard: wf.Name != api.GlobalWorkflow}
		for _, a := range h.Agents {
			if a.Workflow != wf.Name || a.Tag != wf.Tag {
				continue
			}
			switch a.State {
			case api.AgentRunning:
				row.Running++
			case api.AgentFailed:
				row.Failed = append(row.Failed, a.Name+": "+a.Error)
			}
		}
		if ms, err := v.api.Peek(ctx, wf.Target, 1, 0); err == nil && len(ms) > 0 {
			row.Last = &ms[len(ms)-1]
		}
		rows = append(rows, row)
	}
	return v.s.pages().render(w, r, "overview", ss, "Overview", map[string]any{"Health": h, "Teams": rows,
		"NeedsYou": v.needsYou(ctx, ss, nil, "/console/")})
}

// memberRow is one agent on a team page.
type memberRow struct {
	api.Agent
	Run    *api.Run       // its run in flight, if any
	Effort *api.EffortRow // its active effort, if any
}

func (v *views) team(w http.ResponseWriter, r *http.Request, ss session) error {
	ctx := r.Context()
	t, err := scopeTarget(r)
	if err != nil {
		return err
	}
	wf, err := v.api.GetWorkflow(ctx, t)
	if err != nil {
		return err
	}
	agents, err := v.api.ListAgents(ctx)
	if err != nil {
		return err
	}
	runs, err := v.api.Runs(ctx, api.RunQuery{Target: t.String(), Limit: 50})
	if err != nil {
		return err
	}
	efforts, err := v.effortsOf(r, t)
	if err != nil {
		return err
	}
	var members []memberRow
	for _, a := range agents {
		if a.Workflow != t.Workflow || a.Tag != t.Tag {
			continue
		}
		m := memberRow{Agent: a, Effort: efforts[a.Name]}
		for i, run := range runs {
			if run.Agent == a.Target && (run.State == api.RunRunning || run.State == api.RunQueued) {
				m.Run = &runs[i]
				break
			}
		}
		members = append(members, m)
	}
	ms, err := v.api.Peek(ctx, t.String(), channelShown, 0)
	if err != nil {
		return err
	}
	// ?at=SEQ opens the channel at a message (a search hit) older than
	// the last ones: the page shows the channel from there on.
	if at, err := strconv.ParseInt(r.URL.Query().Get("at"), 10, 64); err == nil && at > 0 && len(ms) > 0 && at < ms[0].Seq {
		if ms, err = v.api.Peek(ctx, t.String(), channelShown, at-1); err != nil {
			return err
		}
	}
	tasks, err := v.api.Tasks(ctx, t, "", "")
	if err != nil {
		return err
	}
	// The merge queue of a team whose workspace has checks: what is on
	// its way, then the newest outcomes. A team without a git workspace
	// has none.
	queue, err := v.api.Queue(ctx, t.String(), true)
	if api.ErrorCode(err) == api.CodeInvalid {
		queue, err = nil, nil
	}
	if err != nil {
		return err
	}
	if len(queue) > queueShown {
		queue = queue[:queueShown]
	}
	var last int64
	if len(ms) > 0 {
		last = ms[len(ms)-1].Seq
	}
	return v.s.pages().render(w, r, "team", ss, wf.Target, map[string]any{
		"Workflow": wf, "Target": t, "Members": members, "Messages": ms, "LastSeq": last, "Tasks": tasks, "Queue": queue,
		"NeedsYou": v.needsYou(ctx, ss, &t, teamPath(t)),
	})
}

// messages is the team page's channel after ?after=SEQ, as HTML list items
// for the page's script to append.
func (v *views) messages(w http.ResponseWriter, r *http.Request, ss session) error {
	t, err := scopeTarget(r)
	if err != nil {
		return err
	}
	after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if err != nil || after < 0 {
		return api.Errorf(api.CodeInvalid, "after=%q: give the seq of the last message shown", r.URL.Query().Get("after"))
	}
	ms, err := v.api.Peek(r.Context(), t.String(), 1000, after)
	if err != nil {
		return err
	}
	return v.s.pages().fragment(w, "messages", map[string]any{"Target": t, "Messages": ms})
}

// send posts the user's message to a team's channel.
func (v *views) send(w http.ResponseWriter, r *http.Request, ss session) error {
	t, err := scopeTarget(r)
	if err != nil {
		return err
	}
	text := strings.TrimSpace(r.PostFormValue("message"))
	if text == "" {
		return api.Errorf(api.CodeInvalid, "the message is empty: write something to send")
	}
	m, err := v.api.Send(r.Context(), api.SendRequest{Target: t.String(), Message: text, To: r.PostFormValue("to")})
	if err != nil {
		return err
	}
	return done(w, r, teamPath(t)+"#m"+strconv.FormatInt(m.Seq, 10))
}

// control is a pause, resume or cancel button: of an agent, a team, or
// one run.
func (v *views) control(w http.ResponseWriter, r *http.Request, ss session) error {
	ctx := r.Context()
	action, back := r.PostFormValue("action"), r.PostFormValue("back")
	if !strings.HasPrefix(back, "/console/") {
		back = "/console/"
	}
	if id := r.PostFormValue("run"); id != "" {
		if action != "cancel" {
			return api.Errorf(api.CodeInvalid, "a run can only be cancelled, not %q", action)
		}
		if _, err := v.api.CancelRun(ctx, id); err != nil {
			return err
		}
		return done(w, r, back)
	}
	t, err := api.ParseTarget(r.PostFormValue("target"))
	if err != nil {
		return err
	}
	switch action {
	case "pause":
		err = v.api.Pause(ctx, t)
	case "resume":
		err = v.api.Resume(ctx, t)
	case "cancel":
		_, err = v.api.CancelAgent(ctx, t)
	default:
		return api.Errorf(api.CodeInvalid, "unknown action %q: use pause, resume or cancel", action)
	}
	if err != nil {
		return err
	}
	return done(w, r, back)
}

// done ends a change: a script's request gets 204, a plain form is sent
// back to the page it came from.
func done(w http.ResponseWriter, r *http.Request, back string) error {
	if r.Header.Get("X-CSRF-Token") != "" {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

func (v *views) docs(w http.ResponseWriter, r *http.Request, ss session) error {
	ctx := r.Context()
	t, err := scopeTarget(r)
	if err != nil {
		return err
	}
	docs, err := v.api.DocList(ctx, t)
	if err != nil {
		return err
	}
	props, err := v.api.Proposals(ctx, t, false)
	if err != nil {
		return err
	}
	return v.s.pages().render(w, r, "docs", ss, "Documents of "+t.Display(), map[string]any{
		"Target": t, "Docs": docs, "Proposals": props,
	})
}

func (v *views) doc(w http.ResponseWriter, r *http.Request, ss session) error {
	ctx := r.Context()
	t, err := scopeTarget(r)
	if err != nil {
		return err
	}
	p := r.PathValue("path")
	d, err := v.api.DocRead(ctx, t, p)
	if err != nil {
		return err
	}
	docs, err := v.api.DocList(ctx, t)
	if err != nil {
		return err
	}
	ext := strings.ToLower(path.Ext(p))
	return v.s.pages().render(w, r, "doc", ss, p, map[string]any{
		"Target": t, "Path": p, "Doc": d, "Owner": docs.Owner,
		"Markdown": ext == ".md" || ext == ".markdown",
	})
}

func (v *views) resource(w http.ResponseWriter, r *http.Request, ss session) error {
	t, err := scopeTarget(r)
	if err != nil {
		return err
	}
	res, err := v.api.Resource(r.Context(), t, r.PathValue("id"))
	if err != nil {
		return err
	}
	return v.s.pages().render(w, r, "resource", ss, res.ID, map[string]any{"Target": t, "Resource": res})
}

func (v *views) runs(w http.ResponseWriter, r *http.Request, ss session) error {
	q := r.URL.Query()
	f := api.RunQuery{Target: strings.TrimSpace(q.Get("target")), Failed: q.Get("failed") == "true", Limit: runsShown}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		f.Limit = n
	}
	runs, err := v.api.Runs(r.Context(), f)
	if err != nil {
		return err
	}
	return v.s.pages().render(w, r, "runs", ss, "Runs", map[string]any{"Filter": f, "Runs": runs})
}

func (v *views) run(w http.ResponseWriter, r *http.Request, ss session) error {
	d, err := v.api.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	entries := make([]entry, 0, len(d.Events))
	for _, e := range d.Events {
		entries = append(entries, transcriptEntry(e))
	}
	return v.s.pages().render(w, r, "run", ss, "Run "+d.ID, map[string]any{
		"Run": d.Run, "Entries": entries, "Live": d.State == api.RunRunning || d.State == api.RunQueued,
		"TraceURL": v.s.traceLink(d.TraceID),
	})
}

// traceLink is the address of trace id in the user's tracing UI (the
// daemon's --trace-url), "" without either.
func (s *Server) traceLink(id string) string {
	if id == "" || s.traceURL == "" {
		return ""
	}
	return strings.ReplaceAll(s.traceURL, "{trace_id}", id)
}

func (v *views) cost(w http.ResponseWriter, r *http.Request, ss session) error {
	runs, err := v.api.Runs(r.Context(), api.RunQuery{Limit: costRuns})
	if err != nil {
		return err
	}
	now := v.s.now()
	byWorkflow := spendSeries(runs, now, func(run api.Run) string { return run.Scope })
	byAgent := spendSeries(runs, now, func(run api.Run) string { return run.Agent })
	return v.s.pages().render(w, r, "cost", ss, "Cost", map[string]any{
		"Workflows": byWorkflow, "Agents": byAgent,
		"WorkflowChart": drawChart(byWorkflow), "AgentChart": drawChart(byAgent),
		"Runs": len(runs), "Capped": len(runs) == costRuns,
	})
}

// pluginRow is one plugin and the recent failed runs of its backend.
type pluginRow struct {
	api.Plugin
	Failures []api.Run
}

func (v *views) plugins(w http.ResponseWriter, r *http.Request, ss session) error {
	ctx := r.Context()
	l, err := v.api.Plugins(ctx)
	if err != nil {
		return err
	}
	failed, err := v.api.Runs(ctx, api.RunQuery{Failed: true, Limit: 200})
	if err != nil {
		return err
	}
	rows := make([]pluginRow, 0, len(l.Plugins))
	for _, p := range l.Plugins {
		row := pluginRow{Plugin: p}
		for _, run := range failed {
			if p.Kind == "backend" && run.Backend == p.Name && len(row.Failures) < 5 {
				row.Failures = append(row.Failures, run)
			}
		}
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b pluginRow) int { return strings.Compare(a.Kind, b.Kind) })
	return v.s.pages().render(w, r, "plugins", ss, "Plugins", map[string]any{"Dirs": l.Dirs, "Plugins": rows})
}

// events is the daemon's event stream (GET /events) for the page's
// script: served by the API route itself, so it is the same stream the
// CLI follows.
func (v *views) events(w http.ResponseWriter, r *http.Request, ss session) error {
	q := url.Values{}
	if t := r.URL.Query().Get("target"); t != "" {
		q.Set("target", t)
	}
	if s := r.URL.Query().Get("since_seq"); s != "" {
		q.Set("since_seq", s)
	}
	v.proxy(w, r, "/events", q)
	return nil
}

// runEvents follows a run's transcript (GET /runs/{id}/events?follow=true).
func (v *views) runEvents(w http.ResponseWriter, r *http.Request, ss session) error {
	v.proxy(w, r, "/runs/"+url.PathEscape(r.PathValue("id"))+"/events", url.Values{"follow": {"true"}})
	return nil
}

// proxy serves r with the API route at p, streaming its answer.
func (v *views) proxy(w http.ResponseWriter, r *http.Request, p string, q url.Values) {
	r2 := r.Clone(r.Context())
	r2.URL = &url.URL{Path: p, RawQuery: q.Encode()}
	r2.RequestURI = r2.URL.RequestURI()
	r2.Header.Del("Cookie")
	v.inner.ServeHTTP(w, r2)
}

func (v *views) logout(w http.ResponseWriter, r *http.Request, ss session) error {
	v.s.endSession(r)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/console", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	v.s.pages().fail(w, http.StatusOK, "Logged out", "Run `agent-worker console` to log in again.")
	return nil
}

// scopeTarget is the @wf:tag of a console path.
func scopeTarget(r *http.Request) (api.Target, error) {
	return api.ParseTarget("@" + r.PathValue("wf") + ":" + r.PathValue("tag"))
}

func teamPath(t api.Target) string {
	return "/console/team/" + url.PathEscape(t.Workflow) + "/" + url.PathEscape(t.Tag)
}
