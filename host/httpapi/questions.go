package httpapi

import (
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// handleQuestions is GET /questions?target=T&all=true: what agents asked
// the owner, oldest first; pending ones unless all, of an agent or a
// workflow:tag when target is set.
func (h *Server) handleQuestions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := store.QuestionFilter{All: q.Get("all") == "true" || q.Get("all") == "1"}
	if target := q.Get("target"); target != "" {
		t, err := api.ParseTarget(target)
		if err != nil {
			return err
		}
		if t.IsScope() {
			s := scopeOf(t)
			f.Scope = &s
		} else {
			k := keyOf(t)
			if _, err := h.db.GetAgent(r.Context(), k); err != nil {
				return err
			}
			f.Agent = &k
		}
	}
	qs, err := h.db.ListQuestions(r.Context(), f)
	if err != nil {
		return err
	}
	out := api.QuestionList{Questions: make([]api.Question, 0, len(qs))}
	for _, q := range qs {
		out.Questions = append(out.Questions, team.APIQuestion(q))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// handleAnswerQuestion is POST /questions/{id}/answer: the owner answers;
// the asking agent gets the answer as a message that wakes it.
func (h *Server) handleAnswerQuestion(w http.ResponseWriter, r *http.Request) error {
	var req contract.AnswerRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	q, err := h.team.Answer(r.Context(), r.PathValue("id"), req.Answer, req.By)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, team.APIQuestion(q))
	return nil
}

// DecideRequest is POST /questions/{id}/approve and /deny's body: why (for
// a denial; the gated call fails with it) and who decides ("user" when
// empty).
type decideRequest = contract.DecideRequest

// handleApprove is POST /questions/{id}/approve: the gated action goes
// ahead.
func (h *Server) handleApprove(w http.ResponseWriter, r *http.Request) error {
	return h.decide(w, r, true)
}

// handleDeny is POST /questions/{id}/deny: the gated call fails with the
// reason.
func (h *Server) handleDeny(w http.ResponseWriter, r *http.Request) error {
	return h.decide(w, r, false)
}

func (h *Server) decide(w http.ResponseWriter, r *http.Request, approve bool) error {
	var req decideRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
	}
	q, err := h.team.Decide(r.Context(), r.PathValue("id"), approve, req.Reason, req.By)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, team.APIQuestion(q))
	return nil
}
