package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/host/efforts"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// Efforts serves the skills and efforts routes (host/efforts.Service).
// The routes act as the agent the user names: they hold no token, so a
// step takes the effort's current one, whose single use still holds.
type Efforts interface {
	SkillList(ctx context.Context, scope *store.Scope) (api.SkillList, error)
	Start(ctx context.Context, req efforts.StartRequest) (tools.EffortResult, error)
	Continue(ctx context.Context, st efforts.Step) (tools.EffortResult, error)
	Finish(ctx context.Context, f efforts.FinishRequest) (tools.EffortResult, error)
	Log(ctx context.Context, agent store.AgentKey, text string) (tools.EffortResult, error)
	List(ctx context.Context, f store.EffortFilter) (api.EffortList, error)
	Show(ctx context.Context, id string, agent *store.AgentKey) (api.EffortShow, error)
	// Artifact reads one of the effort's files in its directory.
	Artifact(ctx context.Context, id, name string) (api.EffortArtifactFile, error)
	// Problems are the skill files that could not be read.
	Problems() []string
}

var _ Efforts = (*efforts.Service)(nil)

func (h *Server) effortsOrErr() (Efforts, error) {
	if h.efforts == nil {
		return nil, api.Errorf(api.CodeUnavailable, "this daemon serves no efforts")
	}
	return h.efforts, nil
}

// queryScope reads ?target=@wf[:tag]; nil when absent.
func queryScope(r *http.Request) (*store.Scope, error) {
	target := r.URL.Query().Get("target")
	if target == "" {
		return nil, nil
	}
	t, err := api.ParseTarget(target)
	if err != nil {
		return nil, err
	}
	if !t.IsScope() {
		return nil, api.Errorf(api.CodeInvalid, "target %s names an agent: give its workflow, @%s:%s", target, t.Workflow, t.Tag)
	}
	s := scopeOf(t)
	return &s, nil
}

// agentOf reads an agent target from a request body.
func agentOf(target string) (store.AgentKey, error) {
	if strings.TrimSpace(target) == "" {
		return store.AgentKey{}, api.Errorf(api.CodeInvalid, "which agent? give agent (agent@wf[:tag])")
	}
	t, err := api.ParseAgentTarget(target)
	if err != nil {
		return store.AgentKey{}, err
	}
	return keyOf(t), nil
}

// handleSkills is GET /skills[?target=@wf[:tag]].
func (h *Server) handleSkills(w http.ResponseWriter, r *http.Request) error {
	l, err := h.skillList(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}

// skillList is the skills the agents of the request's ?target= find.
func (h *Server) skillList(r *http.Request) (api.SkillList, error) {
	svc, err := h.effortsOrErr()
	if err != nil {
		return api.SkillList{}, err
	}
	scope, err := queryScope(r)
	if err != nil {
		return api.SkillList{}, err
	}
	return svc.SkillList(r.Context(), scope)
}

// handleSkill is GET /skills/{name}[?target=@wf[:tag]].
func (h *Server) handleSkill(w http.ResponseWriter, r *http.Request) error {
	l, err := h.skillList(r)
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	i := slices.IndexFunc(l.Skills, func(s api.Skill) bool { return s.Name == name })
	if i < 0 {
		names := make([]string, len(l.Skills))
		for j, s := range l.Skills {
			names[j] = s.Name
		}
		return contract.Errorf(contract.CodeNotFound, "no skill %q in %s%s", name, strings.Join(l.Folders, ", "), didYouMean(name, names))
	}
	writeJSON(w, http.StatusOK, l.Skills[i])
	return nil
}

// didYouMean is ": did you mean X?" for the closest of names, or the
// list of them.
func didYouMean(name string, names []string) string {
	if c := workflow.Closest(name, names); c != "" {
		return ": did you mean " + c + "?"
	}
	if len(names) == 0 {
		return ": there are no skills"
	}
	return ": the skills are " + strings.Join(names, ", ")
}

// effortStep serves a POST that acts as the agent its body names: it
// decodes the body into req, reads the agent from *agent (a field of req)
// and writes what step answers with status.
func (h *Server) effortStep(w http.ResponseWriter, r *http.Request, req any, agent *string, status int,
	step func(ctx context.Context, svc Efforts, key store.AgentKey) (tools.EffortResult, error)) error {
	svc, err := h.effortsOrErr()
	if err != nil {
		return err
	}
	if err := decodeJSON(w, r, req); err != nil {
		return err
	}
	key, err := agentOf(*agent)
	if err != nil {
		return err
	}
	res, err := step(r.Context(), svc, key)
	if err != nil {
		return err
	}
	writeJSON(w, status, res)
	return nil
}

// proofOf is a body's proof fields; none is an empty proof, not a missing one.
func proofOf(fields map[string]string) efforts.Proof {
	if fields == nil {
		fields = map[string]string{}
	}
	return efforts.Proof{Text: fields}
}

// handleEffortStart is POST /efforts.
func (h *Server) handleEffortStart(w http.ResponseWriter, r *http.Request) error {
	var req api.EffortStartRequest
	return h.effortStep(w, r, &req, &req.Agent, http.StatusCreated, func(ctx context.Context, svc Efforts, key store.AgentKey) (tools.EffortResult, error) {
		return svc.Start(ctx, efforts.StartRequest{Agent: key, Dir: req.Dir, Skill: req.Skill, Mode: req.Mode})
	})
}

// handleEffortNext is POST /efforts/next.
func (h *Server) handleEffortNext(w http.ResponseWriter, r *http.Request) error {
	var req api.EffortNextRequest
	return h.effortStep(w, r, &req, &req.Agent, http.StatusOK, func(ctx context.Context, svc Efforts, key store.AgentKey) (tools.EffortResult, error) {
		return svc.Continue(ctx, efforts.Step{Agent: key, Proof: proofOf(req.Proof), Notes: req.Notes})
	})
}

// handleEffortLog is POST /efforts/log.
func (h *Server) handleEffortLog(w http.ResponseWriter, r *http.Request) error {
	var req api.EffortLogRequest
	return h.effortStep(w, r, &req, &req.Agent, http.StatusOK, func(ctx context.Context, svc Efforts, key store.AgentKey) (tools.EffortResult, error) {
		return svc.Log(ctx, key, req.Text)
	})
}

// handleEffortFinish is POST /efforts/finish.
func (h *Server) handleEffortFinish(w http.ResponseWriter, r *http.Request) error {
	var req api.EffortFinishRequest
	return h.effortStep(w, r, &req, &req.Agent, http.StatusOK, func(ctx context.Context, svc Efforts, key store.AgentKey) (tools.EffortResult, error) {
		return svc.Finish(ctx, efforts.FinishRequest{Agent: key, Abandon: req.Abandon, Reason: req.Reason, Notes: req.Notes,
			Proof: proofOf(req.Proof)})
	})
}

// handleEfforts is GET /efforts[?dir=D][&target=@wf[:tag]][&all=1].
func (h *Server) handleEfforts(w http.ResponseWriter, r *http.Request) error {
	svc, err := h.effortsOrErr()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := store.EffortFilter{Dir: q.Get("dir"), All: q.Get("all") == "1" || q.Get("all") == "true"}
	if target := q.Get("target"); target != "" {
		t, err := api.ParseTarget(target)
		if err != nil {
			return err
		}
		f.Workflow, f.Tag, f.Agent = t.Workflow, t.Tag, t.Agent
	}
	l, err := svc.List(r.Context(), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}

// handleEffortShow is GET /efforts/{id}, or GET /efforts/-?agent=A for
// the agent's current (else latest) effort.
func (h *Server) handleEffortShow(w http.ResponseWriter, r *http.Request) error {
	svc, err := h.effortsOrErr()
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	var agent *store.AgentKey
	if a := r.URL.Query().Get("agent"); a != "" {
		key, err := agentOf(a)
		if err != nil {
			return err
		}
		agent = &key
	}
	if id == "-" {
		id = ""
		if agent == nil {
			return api.Errorf(api.CodeInvalid, "effort show needs an effort id or ?agent=")
		}
	}
	s, err := svc.Show(r.Context(), id, agent)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s)
	return nil
}

// handleEffortArtifact is GET /efforts/{id}/artifacts/{name}: one of the
// effort's own files (its plan, log, debrief…), read-only. Only a bare
// name the effort's skill gives is served.
func (h *Server) handleEffortArtifact(w http.ResponseWriter, r *http.Request) error {
	svc, err := h.effortsOrErr()
	if err != nil {
		return err
	}
	f, err := svc.Artifact(r.Context(), r.PathValue("id"), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, f)
	return nil
}
