package httpapi

import (
	"net/http"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/store"
)

// taskScope reads the board a task route is about: a workflow target
// (@wf[:tag]); an agent's target is refused, since a board belongs to its
// workflow. def is the target when none is given ("" requires one).
func taskScope(target, def string) (store.Scope, error) {
	if target == "" {
		if def == "" {
			return store.Scope{}, api.Errorf(api.CodeInvalid, "target is missing: give the board's workflow, e.g. @review or @review:pr-1")
		}
		target = def
	}
	t, err := api.ParseScopeTarget(target, "tasks")
	return scopeOf(t), err
}

// handleListTasks is GET /tasks?target=@wf[:tag]&state=S&assignee=A: a
// board, oldest first (target defaults to the standalone agents' board).
func (h *Server) handleListTasks(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	scope, err := taskScope(q.Get("target"), "@"+api.GlobalWorkflow)
	if err != nil {
		return err
	}
	// The store checks the state, with the same error the task_list tool gives.
	f := store.TaskFilter{State: api.TaskState(q.Get("state")), Assignee: q.Get("assignee")}
	ts, err := h.team.Tasks(r.Context(), scope, f)
	if err != nil {
		return err
	}
	out := api.TaskList{Tasks: make([]api.Task, 0, len(ts))}
	for _, t := range ts {
		out.Tasks = append(out.Tasks, team.APITask(t))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// handleCreateTask is POST /tasks: the user adds a task to a board.
func (h *Server) handleCreateTask(w http.ResponseWriter, r *http.Request) error {
	var req api.TaskCreate
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	scope, err := taskScope(req.Target, "")
	if err != nil {
		return err
	}
	t, err := h.team.CreateTask(r.Context(), store.NewTask{Workflow: scope.Workflow, Tag: scope.Tag, Title: req.Title,
		Description: req.Description, Priority: req.Priority, DependsOn: req.DependsOn, Parent: req.Parent,
		Assignee: req.Assignee, Role: req.Role, CreatedBy: team.SenderUser})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, team.APITask(t))
	return nil
}

// handleCancelTask is POST /tasks/{id}/cancel: the user cancels a task
// and its open subtasks, saying why; a completed or failed one is refused.
func (h *Server) handleCancelTask(w http.ResponseWriter, r *http.Request) error {
	var req api.TaskCancel
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	var scope store.Scope
	if req.Target != "" {
		var err error
		if scope, err = taskScope(req.Target, ""); err != nil {
			return err
		}
	}
	id := store.TaskID(r.PathValue("id"))
	if scope == (store.Scope{}) { // ids are unique across boards
		t, _, err := h.team.Task(r.Context(), scope, id)
		if err != nil {
			return err
		}
		scope = store.Scope{Workflow: t.Workflow, Tag: t.Tag}
	}
	t, err := h.team.CancelTask(r.Context(), scope, team.SenderUser, id, req.Reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, team.APITask(t))
	return nil
}

// handleGetTask is GET /tasks/{id}[?target=@wf[:tag]]: one task with its
// history. Ids are unique across boards, so the target only checks which
// board the caller expects.
func (h *Server) handleGetTask(w http.ResponseWriter, r *http.Request) error {
	var scope store.Scope
	if target := r.URL.Query().Get("target"); target != "" {
		var err error
		if scope, err = taskScope(target, ""); err != nil {
			return err
		}
	}
	t, history, err := h.team.Task(r.Context(), scope, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.TaskDetail{Task: team.APITask(t), History: team.APITaskEvents(history),
		Scope: api.Target{Workflow: t.Workflow, Tag: t.Tag}.Display()})
	return nil
}
