package httpapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/agents"
	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/store"
)

func (h *Server) handleHealth(w http.ResponseWriter, r *http.Request) error {
	out, err := h.health(r.Context())
	if api.ErrorCode(err) == api.CodeUnavailable {
		// Status still answers, from what the daemon knows without its
		// store, and says why the store does not (unreachable, damaged).
		writeJSON(w, http.StatusOK, h.healthWithoutStore(err))
		return nil
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// health is GET /health read from the store.
func (h *Server) health(ctx context.Context) (api.Health, error) {
	counts, err := h.db.Counts(ctx)
	if err != nil {
		return api.Health{}, err
	}
	h.unreachable.Store(nil)
	agents, err := h.listAgents(ctx, store.AgentFilter{})
	if err != nil {
		return api.Health{}, err
	}
	wfs, err := h.listWorkflows(ctx, agents)
	if err != nil {
		return api.Health{}, err
	}
	if err := h.addSpend(ctx, agents, wfs); err != nil {
		return api.Health{}, err
	}
	problems := []string{}
	for _, a := range agents {
		if a.State == api.AgentFailed {
			problems = append(problems, "agent "+a.Target+" failed: "+a.Error)
		}
		if a.State != api.AgentStopped {
			for _, w := range a.Warnings {
				problems = append(problems, "agent "+a.Target+": "+w)
			}
		}
		if p := staleProblem(a, h.now()); p != "" {
			problems = append(problems, p)
		}
	}
	for _, wf := range wfs {
		if wf.Error != "" {
			problems = append(problems, "workflow "+wf.Target+": "+wf.Error)
		}
		if wf.Pending != nil {
			problems = append(problems, contract.PendingProblem(wf))
		}
	}
	gaps, err := h.db.RoleGaps(ctx)
	if err != nil {
		return api.Health{}, err
	}
	for _, g := range gaps {
		problems = append(problems, fmt.Sprintf("workflow %s: %s %s for the role %s, which none of its agents has: give an agent `roles: [%s]`, or cancel the task",
			api.Target{Workflow: g.Scope.Workflow, Tag: g.Scope.Tag}.Display(), strings.Join(g.Tasks, ", "), isAre(len(g.Tasks)), g.Role, g.Role))
	}
	if h.sandbox.State == api.SandboxUnavailable {
		problems = append(problems, "runs are not sandboxed: "+h.sandbox.Detail)
	}
	plugins := h.plugins()
	for _, p := range plugins {
		if p.Error != "" {
			problems = append(problems, p.Kind+" plugin "+p.Name+" ("+p.Path+"): "+p.Error)
		}
	}
	running, err := h.runningWorkers(ctx)
	if err != nil {
		return api.Health{}, err
	}
	storeHealth, storeProblems := h.storeHealth()
	problems = append(problems, storeProblems...)
	cluster, clusterProblems, err := h.cluster(ctx, wfs)
	if err != nil {
		return api.Health{}, err
	}
	problems = append(problems, clusterProblems...)
	if h.loops != nil {
		problems = append(problems, h.loops()...)
	}
	if h.efforts != nil {
		problems = append(problems, h.efforts.Problems()...)
	}
	now := h.now()
	status := "ok"
	if storeHealth.CorruptSince != nil {
		status = "degraded"
	}
	return api.Health{
		Status: status, Version: api.Version, PID: os.Getpid(),
		Listen: h.listen, Home: h.home, Database: h.db.Path(),
		StartedAt: h.startedAt.UTC(), UptimeMS: now.Sub(h.startedAt).Milliseconds(),
		Counts: contract.Counts{Agents: counts.Agents, Workflows: counts.Workflows, Messages: counts.Messages, Runs: counts.Runs},
		Agents: agents, Workflows: wfs, Plugins: plugins, Problems: problems,
		Workers: running, Store: storeHealth, Cluster: cluster, Sandbox: h.sandbox, Processes: h.processes, TLS: h.info().TLS, ListenFallback: h.fallback,
	}, nil
}

func (h *Server) handleShutdown(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, api.Status{Status: "stopping"})
	h.stopServing()
	return nil
}

func (h *Server) handleListAgents(w http.ResponseWriter, r *http.Request) error {
	agents, err := h.listAgents(r.Context(), store.AgentFilter{})
	if err != nil {
		return err
	}
	if err := h.addSpend(r.Context(), agents, nil); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.AgentList{Agents: agents})
	return nil
}

func (h *Server) handleCreateAgent(w http.ResponseWriter, r *http.Request) error {
	var spec api.AgentSpec
	if err := decodeJSON(w, r, &spec); err != nil {
		return err
	}
	stored, err := h.agents.Create(r.Context(), spec)
	if err != nil {
		return err
	}
	out, err := h.toAPIAgent(r.Context(), stored)
	if err != nil {
		return err
	}
	one := []api.Agent{out} // the same view as GET /agents: spend included
	if err := h.addSpend(r.Context(), one, nil); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, one[0])
	return nil
}

func (h *Server) handleGetAgent(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	a, err := h.db.GetAgent(r.Context(), keyOf(t))
	if err != nil {
		return err
	}
	out, err := h.toAPIAgent(r.Context(), a)
	if err != nil {
		return err
	}
	runs, err := h.db.ListRuns(r.Context(), store.RunFilter{Agent: a.Key(), Limit: 5})
	if err != nil {
		return err
	}
	for _, run := range runs {
		out.Runs = append(out.Runs, apiRun(run))
	}
	one := []api.Agent{out}
	if err := h.addSpend(r.Context(), one, nil); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, one[0])
	return nil
}

func (h *Server) handleDeleteAgent(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	if err := h.agents.Delete(r.Context(), keyOf(t)); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Status{Status: "deleted", Target: t.Display()})
	return nil
}

func (h *Server) handleListWorkflows(w http.ResponseWriter, r *http.Request) error {
	wfs, err := h.listWorkflows(r.Context(), nil)
	if err != nil {
		return err
	}
	if err := h.addSpend(r.Context(), nil, wfs); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.WorkflowList{Workflows: wfs})
	return nil
}

func (h *Server) handleGetWorkflow(w http.ResponseWriter, r *http.Request) error {
	t, err := scopeFromPath(r)
	if err != nil {
		return err
	}
	out, err := h.apiWorkflow(r.Context(), scopeOf(t), true)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *Server) handleStartWorkflow(w http.ResponseWriter, r *http.Request) error {
	var req api.StartWorkflow
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	st, err := h.wfs.Start(r.Context(), req)
	if err != nil {
		return err
	}
	t := api.Target{Workflow: st.Scope.Workflow, Tag: st.Scope.Tag}
	out := api.Workflow{Name: t.Workflow, Tag: t.Tag, Target: t.Display()}
	if !st.DryRun {
		if out, err = h.apiWorkflow(r.Context(), st.Scope, false); err != nil {
			return err
		}
	}
	out.StartSeq, out.TakenOver = st.StartSeq, st.TakenOver
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// handleStopWorkflow stops a workflow; its agents stop after their current
// run, or at once with ?cancel=true.
func (h *Server) handleStopWorkflow(w http.ResponseWriter, r *http.Request) error {
	t, err := scopeFromPath(r)
	if err != nil {
		return err
	}
	if err := h.wfs.Stop(r.Context(), scopeOf(t), r.URL.Query().Get("cancel") == "true"); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Status{Status: "stopped", Target: t.Display()})
	return nil
}

// handleAcceptWorkflow applies the edit of a workflow's file that waits
// for its owner because it widens what runs may do.
func (h *Server) handleAcceptWorkflow(w http.ResponseWriter, r *http.Request) error {
	t, err := scopeFromPath(r)
	if err != nil {
		return err
	}
	if err := h.wfs.Accept(r.Context(), scopeOf(t)); err != nil {
		return err
	}
	out, err := h.apiWorkflow(r.Context(), scopeOf(t), false)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func scopeFromPath(r *http.Request) (api.Target, error) {
	return api.ParseTarget("@" + r.PathValue("name") + ":" + r.PathValue("tag"))
}

// listAgents returns agents in their wire form, with inbox depths.
func (h *Server) listAgents(ctx context.Context, f store.AgentFilter) ([]api.Agent, error) {
	rows, err := h.db.ListAgents(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]api.Agent, 0, len(rows))
	for _, a := range rows {
		wa, err := h.toAPIAgent(ctx, a)
		if err != nil {
			return nil, err
		}
		out = append(out, wa)
	}
	return out, nil
}

// listWorkflows returns workflows with their member names; agents, when the
// caller already has them, saves a second query.
func (h *Server) listWorkflows(ctx context.Context, agents []api.Agent) ([]api.Workflow, error) {
	rows, err := h.db.ListWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	if agents == nil {
		if agents, err = h.listAgents(ctx, store.AgentFilter{}); err != nil {
			return nil, err
		}
	}
	out := make([]api.Workflow, 0, len(rows))
	for _, wf := range rows {
		w := toAPIWorkflow(wf, agents)
		if w.Budget, err = h.workflowBudget(ctx, wf); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

func (h *Server) toAPIAgent(ctx context.Context, a store.Agent) (api.Agent, error) {
	depth, err := h.db.InboxDepth(ctx, a.Key())
	if err != nil {
		return api.Agent{}, err
	}
	warnings := agents.Warnings(a, h.catalog, os.Getenv)
	if w := agents.SandboxWarning(a, h.sandbox); w != "" {
		warnings = append(warnings, w)
	}
	sessions, err := h.db.Sessions(ctx)
	if err != nil {
		return api.Agent{}, err
	}
	out := api.Agent{
		Name: a.Name, Workflow: a.Workflow, Tag: a.Tag, Target: targetOf(a.Key()).Display(),
		Backend: a.Backend, Model: a.Model, System: a.System,
		Schedule: a.Schedule, WakeupPrompt: a.WakeupPrompt, Config: a.Config,
		State: a.State, Task: a.Task, Error: a.Error, InboxDepth: depth,
		Warnings:  warnings,
		CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC(),
		CanSpawn: a.CanSpawn, MaxSpawned: a.MaxSpawned, SpawnedBy: a.SpawnedBy, Roles: a.Roles,
	}
	s, ok := sessions[a.Key()]
	attachSession(&out, s, ok, h.now())
	return out, nil
}

// toAPIWorkflow attaches the names of wf's members from agents.
func toAPIWorkflow(wf store.Workflow, agents []api.Agent) api.Workflow {
	names, members := []string{}, []api.Member{}
	for _, a := range agents {
		if a.Workflow == wf.Name && a.Tag == wf.Tag {
			names = append(names, a.Name)
			members = append(members, api.Member{Name: a.Name, State: a.State})
		}
	}
	out := api.Workflow{
		Name: wf.Name, Tag: wf.Tag, Target: api.Target{Workflow: wf.Name, Tag: wf.Tag}.Display(),
		SourcePath: wf.SourcePath, State: wf.State, Error: wf.Error, Agents: names, Members: members,
		CreatedAt: wf.CreatedAt.UTC(), UpdatedAt: wf.UpdatedAt.UTC(),
	}
	if wf.PendingYAML != "" {
		out.Pending = &contract.PendingEdit{Widens: append([]string{}, wf.PendingReasons...), Since: wf.PendingAt.UTC()}
	}
	return out
}

func keyOf(t api.Target) store.AgentKey {
	return store.AgentKey{Name: t.Agent, Workflow: t.Workflow, Tag: t.Tag}
}

func targetOf(k store.AgentKey) api.Target {
	return api.Target{Agent: k.Name, Workflow: k.Workflow, Tag: k.Tag}
}

func (h *Server) handleResume(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	if err := h.sched.Resume(r.Context(), keyOf(t)); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Status{Status: "resumed", Target: t.Display()})
	return nil
}

// handleReset forgets the agent's conversation with every backend; a run
// in flight finishes, but its conversation is not kept.
func (h *Server) handleReset(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	n, err := h.db.ResetSessions(r.Context(), keyOf(t))
	if api.ErrorCode(err) == api.CodeNotFound {
		return api.Errorf(api.CodeNotFound, "no agent %s: `agent-worker list` shows the agents there are", t.Display())
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contract.Reset{Status: "reset", Target: t.Display(), Forgotten: n})
	return nil
}

func (h *Server) handleSetSchedule(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	var req api.ScheduleRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Schedule == "" {
		return api.Errorf(api.CodeInvalid, "schedule is empty: give an interval (30m) or a cron expression, or DELETE to clear it")
	}
	return h.changeSchedule(w, r, t, req.Schedule, req.WakeupPrompt)
}

func (h *Server) handleClearSchedule(w http.ResponseWriter, r *http.Request) error {
	t, err := api.ParseAgentTarget(r.PathValue("target"))
	if err != nil {
		return err
	}
	return h.changeSchedule(w, r, t, "", "")
}

func (h *Server) changeSchedule(w http.ResponseWriter, r *http.Request, t api.Target, schedule, prompt string) error {
	if err := h.agents.SetSchedule(r.Context(), keyOf(t), schedule, prompt); err != nil {
		return err
	}
	status := "scheduled"
	if schedule == "" {
		status = "unscheduled"
	}
	writeJSON(w, http.StatusOK, api.Status{Status: status, Target: t.Display()})
	return nil
}

// apiWorkflow is a workflow in its wire form, with its progress if asked.
func (h *Server) apiWorkflow(ctx context.Context, scope store.Scope, withProgress bool) (api.Workflow, error) {
	wf, err := h.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if err != nil {
		return api.Workflow{}, err
	}
	agents, err := h.listAgents(ctx, store.AgentFilter{Workflow: scope.Workflow, Tag: scope.Tag})
	if err != nil {
		return api.Workflow{}, err
	}
	out := toAPIWorkflow(wf, agents)
	if out.Budget, err = h.workflowBudget(ctx, wf); err != nil {
		return api.Workflow{}, err
	}
	// One workflow's runs, not every run's (addSpend): event streams
	// build this view on every message of their scope.
	st, err := h.db.Stats(ctx, scope, time.Time{})
	if err != nil {
		return api.Workflow{}, err
	}
	out.Spend = apiSpend(st)
	if withProgress {
		if out.Progress, err = h.wfs.Progress(ctx, wf); err != nil {
			return api.Workflow{}, err
		}
	}
	return out, nil
}

// addSpend fills in what the agents and workflows have spent, from one
// read of the runs: an agent's total, and a workflow:tag's over every
// agent that ever ran in it.
func (h *Server) addSpend(ctx context.Context, agents []api.Agent, wfs []api.Workflow) error {
	per, err := h.db.Spend(ctx)
	if err != nil {
		return err
	}
	for i, a := range agents {
		agents[i].Spend = apiSpend(per[store.AgentKey{Name: a.Name, Workflow: a.Workflow, Tag: a.Tag}])
	}
	for i, wf := range wfs {
		var total store.RunStats
		for k, st := range per {
			if k.Workflow == wf.Name && k.Tag == wf.Tag {
				total.Add(st)
			}
		}
		wfs[i].Spend = apiSpend(total)
	}
	return nil
}

// handleIdentity is GET /identity, without a token: that this is an
// agent-worker daemon and, to a caller on this machine, its pid and home,
// so that a daemon that finds our address taken can name us. Other
// machines (--allow-remote) learn no path, nor does a web page that
// rebinds its own name to loopback (its Host header is not an IP).
func (h *Server) handleIdentity(w http.ResponseWriter, r *http.Request) error {
	id := api.Identity{Service: api.Service, Version: api.Version}
	if loopbackIP(r.RemoteAddr) && loopbackIP(r.Host) {
		id.PID, id.Home = os.Getpid(), h.home
	}
	writeJSON(w, http.StatusOK, id)
	return nil
}

// loopbackIP says whether hostport is a loopback IP with a port.
func loopbackIP(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
