package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
)

// Workflow is one running instance of a workflow file: the same file can run
// under several tags, and each workflow:tag has its own agents and channel.
type Workflow struct {
	Name, Tag string
	// SourcePath and ConfigYAML keep the file the workflow came from and the
	// last good config, so that a bad edit never replaces what runs.
	SourcePath string
	ConfigYAML string
	// State is empty on create, which means running.
	State contract.WorkflowState
	// Error explains why the workflow failed or why its last edit was rejected.
	Error string
	// Workdir is where the workflow's documents live (.workflow/<wf>/<tag>/
	// under it); empty means the daemon's home.
	Workdir string
	// Owner is the id of the daemon that started the workflow, which
	// watches its file; set by the store, moved by SetWorkflowOwner.
	Owner string
	// DocsProvider names the document provider (file, sqlite, a plugin);
	// "" is the daemon's default: file, or postgres in a cluster.
	DocsProvider string
	// DocsOwner, when set, is the only agent allowed to change documents.
	DocsOwner string
	// LongMessageChars overrides the length above which a message is stored
	// as a resource; 0 means the daemon's default.
	LongMessageChars int
	// LoopGuard is how many agent messages in a row pause the workflow;
	// 0 is off.
	LoopGuard int
	// DocsDir, when set, is the folder that holds the documents themselves
	// (context.documents.dir), instead of .workflow/<wf>/<tag>/documents/
	// under Workdir.
	DocsDir string
	// Params and Vars (setup results) are what the workflow was started
	// with, kept so that an edit or a restart resolves it the same way.
	Params, Vars map[string]string
	// WorkspaceRepo and WorkspaceBase are a git workspace's repository
	// (its top-level directory) and base branch; both "" without one.
	WorkspaceRepo, WorkspaceBase string
	// Repos are the workspace's named repositories (workspace.repos) as
	// resolved when the workflow loaded; nil without any.
	Repos []WorkspaceRepo
	// Within is set on a view of the workflow for one of its git
	// repositories (InRepo): WorkspaceRepo and WorkspaceBase are then that
	// repository's. "" is the workflow's own. It is never stored.
	Within string
	// PendingYAML is a version of the file that widens what its runs may
	// do (workflow.Widens), held until the owner accepts it, "" when none
	// waits; PendingReasons say how it widens, PendingAt when it was
	// found. Saving a config (SaveWorkflow) drops it.
	PendingYAML    string
	PendingReasons []string
	PendingAt      time.Time
	// StartedAt is when the workflow was last started; SaveWorkflow keeps
	// the stored one when it is zero (a reload, not a start).
	StartedAt            time.Time
	CreatedAt, UpdatedAt time.Time
}

const workflowColumns = `name, tag, source_path, config_yaml, state, error, created_at, updated_at,
	workdir, docs_provider, docs_owner, long_message_chars, docs_dir, params_json, vars_json, started_at, loop_guard,
	workspace_repo, workspace_base, owner, workspace_repos_json`

// workflowSelect is workflowColumns and what only reads need: the edit
// waiting for its owner.
const workflowSelect = workflowColumns + `, pending_yaml, pending_reasons, pending_at`

func scanWorkflow(s row) (Workflow, error) {
	w := Workflow{
		Name: s.ColumnText(0), Tag: s.ColumnText(1),
		SourcePath: s.ColumnText(2), ConfigYAML: s.ColumnText(3),
		Error:     s.ColumnText(5),
		CreatedAt: fromMs(s.ColumnInt64(6)), UpdatedAt: fromMs(s.ColumnInt64(7)),
		Workdir: s.ColumnText(8), DocsProvider: s.ColumnText(9), DocsOwner: s.ColumnText(10),
		LongMessageChars: s.ColumnInt(11), DocsDir: s.ColumnText(12),
		Params: decodeStrings(s.ColumnText(13)), Vars: decodeStrings(s.ColumnText(14)),
		StartedAt: fromMs(s.ColumnInt64(15)), LoopGuard: s.ColumnInt(16),
		WorkspaceRepo: s.ColumnText(17), WorkspaceBase: s.ColumnText(18), Owner: s.ColumnText(19),
		PendingYAML: s.ColumnText(21),
	}
	if raw := s.ColumnText(20); raw != "" && raw != "[]" {
		if err := json.Unmarshal([]byte(raw), &w.Repos); err != nil {
			return w, contract.Errorf(contract.CodeInternal, "workflow %q in the database: workspace repositories: %w", workflowID(w.Name, w.Tag), err)
		}
	}
	if w.PendingYAML != "" {
		_ = json.Unmarshal([]byte(s.ColumnText(22)), &w.PendingReasons)
		w.PendingAt = fromMs(s.ColumnInt64(23))
	}
	state, err := contract.ParseWorkflowState(s.ColumnText(4))
	if err != nil {
		return w, contract.Errorf(contract.CodeInternal, "workflow %q in the database: %w", workflowID(w.Name, w.Tag), err)
	}
	w.State = state
	return w, nil
}

// workflowID formats a workflow as users write it, "name:tag".
func workflowID(name, tag string) string { return name + ":" + tag }

// CreateWorkflow stores a new workflow:tag and returns it as stored; an
// existing one is a contract.CodeConflict, because starting a workflow twice under
// the same tag is a user mistake.
func (db *DB) CreateWorkflow(ctx context.Context, w Workflow) (Workflow, error) {
	defer db.configChanged()
	if w.Name == "" || w.Tag == "" {
		return Workflow{}, contract.Errorf(contract.CodeInvalid, "workflow %q: name and tag are required", workflowID(w.Name, w.Tag))
	}
	if w.State == "" {
		w.State = contract.WorkflowRunning
	}
	if !w.State.Valid() {
		return Workflow{}, contract.Errorf(contract.CodeInvalid, "workflow %q: unknown state %q", workflowID(w.Name, w.Tag), w.State)
	}
	var stored Workflow
	err := db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		err := conn.execute(`INSERT INTO workflows (`+workflowColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			&execOptions{Args: []any{w.Name, w.Tag, w.SourcePath, w.ConfigYAML, w.State, w.Error, now, now,
				w.Workdir, w.DocsProvider, w.DocsOwner, w.LongMessageChars, w.DocsDir, encodeStrings(w.Params), encodeStrings(w.Vars), now, w.LoopGuard,
				w.WorkspaceRepo, w.WorkspaceBase, db.daemon, encodeRepos(w.Repos)}})
		if isConflict(err) {
			return contract.Errorf(contract.CodeConflict, "workflow %q already exists", workflowID(w.Name, w.Tag))
		}
		if err != nil {
			return err
		}
		stored, err = getWorkflow(conn, w.Name, w.Tag)
		return err
	})
	return stored, err
}

// GetWorkflow returns one workflow:tag, or a contract.CodeNotFound error.
func (db *DB) GetWorkflow(ctx context.Context, name, tag string) (Workflow, error) {
	var w Workflow
	err := db.read(ctx, func(conn querier) (err error) {
		w, err = getWorkflow(conn, name, tag)
		return err
	})
	return w, err
}

func getWorkflow(conn querier, name, tag string) (w Workflow, err error) {
	found := false
	err = conn.execute(`SELECT `+workflowSelect+` FROM workflows WHERE name = ? AND tag = ?`,
		&execOptions{Args: []any{name, tag}, ResultFunc: func(s row) error {
			found = true
			w, err = scanWorkflow(s)
			return err
		}})
	if err == nil && !found {
		err = contract.Errorf(contract.CodeNotFound, "workflow %q not found", workflowID(name, tag))
	}
	return w, err
}

// ListWorkflows returns every workflow:tag, global:main included, ordered
// by name and tag so that listings are stable.
func (db *DB) ListWorkflows(ctx context.Context) ([]Workflow, error) {
	var ws []Workflow
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT `+workflowSelect+` FROM workflows ORDER BY name, tag`,
			&execOptions{ResultFunc: func(s row) error {
				w, err := scanWorkflow(s)
				ws = append(ws, w)
				return err
			}})
	})
	return ws, err
}

// SetWorkflowState records a state change and the error behind it ("" to
// clear it), so that status shows why a workflow stopped or failed.
func (db *DB) SetWorkflowState(ctx context.Context, name, tag string, state contract.WorkflowState, errMsg string) error {
	if !state.Valid() {
		return contract.Errorf(contract.CodeInvalid, "workflow %q: unknown state %q", workflowID(name, tag), state)
	}
	return db.write(ctx, func(conn querier) error {
		// A workflow set running again starts a new count of agent messages
		// in a row, so a resumed team is not paused again at once.
		err := conn.execute(`UPDATE workflows SET state = ?1, error = ?2, updated_at = ?3,
			agent_streak = CASE WHEN ?1 = 'running' THEN 0 ELSE agent_streak END WHERE name = ?4 AND tag = ?5`,
			&execOptions{Args: []any{state, errMsg, db.nowMs(), name, tag}})
		if err == nil && conn.changes() == 0 {
			err = contract.Errorf(contract.CodeNotFound, "workflow %q not found", workflowID(name, tag))
		}
		return err
	})
}

// SetWorkflowError records (or, with "", clears) what is wrong with a
// workflow without changing its state: a rejected edit of a paused
// workflow leaves it paused.
func (db *DB) SetWorkflowError(ctx context.Context, name, tag, errMsg string) error {
	return db.write(ctx, func(conn querier) error {
		err := conn.execute(`UPDATE workflows SET error = ?, updated_at = ? WHERE name = ? AND tag = ?`,
			&execOptions{Args: []any{errMsg, db.nowMs(), name, tag}})
		if err == nil && conn.changes() == 0 {
			err = contract.Errorf(contract.CodeNotFound, "workflow %q not found", workflowID(name, tag))
		}
		return err
	})
}

// SetWorkflowPending records content as the version of the workflow's
// file that waits for its owner, with the reasons it widens what runs
// may do; content "" clears it. The config that runs is left as it is.
func (db *DB) SetWorkflowPending(ctx context.Context, name, tag, content string, reasons []string) error {
	b, err := json.Marshal(reasons)
	if err != nil || content == "" {
		b = []byte("[]")
	}
	return db.write(ctx, func(conn querier) error {
		at := int64(0)
		if content != "" {
			at = db.nowMs()
		}
		err := conn.execute(`UPDATE workflows SET pending_yaml = ?, pending_reasons = ?, pending_at = ?, updated_at = ? WHERE name = ? AND tag = ?`,
			&execOptions{Args: []any{content, string(b), at, db.nowMs(), name, tag}})
		if err == nil && conn.changes() == 0 {
			err = contract.Errorf(contract.CodeNotFound, "workflow %q not found", workflowID(name, tag))
		}
		return err
	})
}

// DeleteWorkflow removes a workflow:tag and, by foreign-key cascade, its
// agents, channel, inboxes, proposals, resources and runs. global:main is
// refused: standalone agents need it to exist.
func (db *DB) DeleteWorkflow(ctx context.Context, name, tag string) error {
	defer db.configChanged()
	if name == "global" && tag == "main" {
		return contract.Errorf(contract.CodeInvalid, "the global workflow cannot be deleted")
	}
	defer db.tokens.forget()
	return db.write(ctx, func(conn querier) error {
		if err := forgetScope(conn, Scope{Workflow: name, Tag: tag}); err != nil {
			return err
		}
		err := conn.execute(`DELETE FROM workflows WHERE name = ? AND tag = ?`,
			&execOptions{Args: []any{name, tag}})
		if err == nil && conn.changes() == 0 {
			err = contract.Errorf(contract.CodeNotFound, "workflow %q not found", workflowID(name, tag))
		}
		return err
	})
}

// SaveWorkflow creates a workflow:tag or replaces everything about an
// existing one but its creation time: starting a stopped workflow again
// (StartedAt set), or applying an edit of its file (StartedAt zero keeps
// the stored start).
func (db *DB) SaveWorkflow(ctx context.Context, w Workflow) (Workflow, error) {
	defer db.configChanged()
	if w.Name == "" || w.Tag == "" {
		return Workflow{}, contract.Errorf(contract.CodeInvalid, "workflow %q: name and tag are required", workflowID(w.Name, w.Tag))
	}
	if w.State == "" {
		w.State = contract.WorkflowRunning
	}
	var stored Workflow
	err := db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		started := now
		if !w.StartedAt.IsZero() {
			started = w.StartedAt.UnixMilli()
		}
		// A reload (StartedAt zero) keeps a paused or over-budget workflow
		// so: an edit of the file is not a resume. A start takes ownership
		// (this daemon watches the file from now on); a reload keeps it.
		err := conn.execute(`INSERT INTO workflows (`+workflowColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name, tag) DO UPDATE SET
			started_at = CASE WHEN ?22 THEN excluded.started_at ELSE workflows.started_at END, source_path = excluded.source_path, config_yaml = excluded.config_yaml,
			state = CASE WHEN NOT ?22 AND workflows.state IN ('paused', 'over_budget') THEN workflows.state ELSE excluded.state END,
			error = CASE WHEN NOT ?22 AND workflows.state IN ('paused', 'over_budget') THEN workflows.error ELSE excluded.error END,
			agent_streak = CASE WHEN ?22 THEN 0 ELSE workflows.agent_streak END, loop_guard = excluded.loop_guard,
			updated_at = excluded.updated_at, workdir = excluded.workdir,
			docs_provider = excluded.docs_provider, docs_owner = excluded.docs_owner,
			long_message_chars = excluded.long_message_chars, docs_dir = excluded.docs_dir,
			params_json = excluded.params_json, vars_json = excluded.vars_json,
			workspace_repo = excluded.workspace_repo, workspace_base = excluded.workspace_base,
			workspace_repos_json = excluded.workspace_repos_json,
			owner = CASE WHEN ?22 THEN excluded.owner ELSE workflows.owner END,
			pending_yaml = '', pending_reasons = '[]', pending_at = 0`,
			&execOptions{Args: []any{w.Name, w.Tag, w.SourcePath, w.ConfigYAML, w.State, w.Error, now, now,
				w.Workdir, w.DocsProvider, w.DocsOwner, w.LongMessageChars, w.DocsDir, encodeStrings(w.Params), encodeStrings(w.Vars),
				started, w.LoopGuard, w.WorkspaceRepo, w.WorkspaceBase, db.daemon, encodeRepos(w.Repos), !w.StartedAt.IsZero()}})
		if err != nil {
			return err
		}
		stored, err = getWorkflow(conn, w.Name, w.Tag)
		return err
	})
	return stored, err
}

// Workspace is a workflow's workspace as the daemon resolved it when the
// workflow loaded: the top-level directory and base branch of its own git
// worktrees ("" for both without), and its named repositories.
type Workspace struct {
	Repo, Base string
	Repos      []WorkspaceRepo
}

// WorkspaceRepo is one repository of a workflow's workspace.repos as the
// daemon resolved it: Path is absolute; a git one (Git) has its
// repository's top-level directory (Top) and base branch.
type WorkspaceRepo struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Write bool   `json:"write,omitempty"`
	Git   bool   `json:"git,omitempty"`
	Top   string `json:"top,omitempty"`
	Base  string `json:"base,omitempty"`
}

// Repo is the repository of w named name, or nil.
func (w Workflow) Repo(name string) *WorkspaceRepo {
	for i := range w.Repos {
		if w.Repos[i].Name == name {
			return &w.Repos[i]
		}
	}
	return nil
}

// InRepo is w seen from its git repository named name ("" for its own
// git workspace): WorkspaceRepo and WorkspaceBase are that repository's,
// Within its name. A repository w does not name, or one that is not a
// git one, is an invalid-argument error naming those it has.
func (w Workflow) InRepo(name string) (Workflow, error) {
	if name == "" {
		if w.WorkspaceRepo == "" {
			return w, contract.Errorf(contract.CodeInvalid, "%s has no git workspace of its own: name one of its repositories (%s) with repo", workflowID(w.Name, w.Tag), strings.Join(w.GitRepoNames(), ", "))
		}
		return w, nil
	}
	r := w.Repo(name)
	switch {
	case r == nil && len(w.Repos) == 0:
		return w, contract.Errorf(contract.CodeInvalid, "repo %q: %s names no repositories (workspace.repos); leave repo out", name, workflowID(w.Name, w.Tag))
	case r == nil:
		return w, contract.Errorf(contract.CodeInvalid, "repo %q is not in the workspace of %s: use one of %s", name, workflowID(w.Name, w.Tag), strings.Join(w.repoNames(), ", "))
	case !r.Git:
		return w, contract.Errorf(contract.CodeInvalid, "repository %s of %s has no git worktrees (git: worktree), so it has no branches to integrate or discard", name, workflowID(w.Name, w.Tag))
	}
	w.WorkspaceRepo, w.WorkspaceBase, w.Within = r.Top, r.Base, name
	return w, nil
}

// Views are w seen from each of its git repositories, its own first.
func (w Workflow) Views() []Workflow {
	var out []Workflow
	if w.WorkspaceRepo != "" {
		out = append(out, w)
	}
	for _, r := range w.Repos {
		if r.Git {
			v := w
			v.WorkspaceRepo, v.WorkspaceBase, v.Within = r.Top, r.Base, r.Name
			out = append(out, v)
		}
	}
	return out
}

// GitRepoNames lists the names of w's git repositories.
func (w Workflow) GitRepoNames() []string {
	var out []string
	for _, r := range w.Repos {
		if r.Git {
			out = append(out, r.Name)
		}
	}
	return out
}

func (w Workflow) repoNames() []string {
	out := make([]string, len(w.Repos))
	for i, r := range w.Repos {
		out[i] = r.Name
	}
	return out
}

func encodeRepos(rs []WorkspaceRepo) string {
	if len(rs) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(rs)
	return string(b)
}

func encodeStrings(m map[string]string) string {
	if m == nil {
		return "{}"
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func decodeStrings(s string) map[string]string {
	m := map[string]string{}
	_ = json.Unmarshal([]byte(s), &m)
	return m
}

// Team reads a workflow:tag and its members' names (sorted) in one read:
// what every message needs before it is written (limits, mentions).
func (db *DB) Team(ctx context.Context, scope Scope) (Workflow, []string, error) {
	var w Workflow
	var names []string
	err := db.read(ctx, func(conn querier) (err error) {
		if w, err = getWorkflow(conn, scope.Workflow, scope.Tag); err != nil {
			return err
		}
		return conn.execute(`SELECT name FROM agents WHERE workflow = ? AND tag = ? ORDER BY name`,
			&execOptions{Args: []any{scope.Workflow, scope.Tag}, ResultFunc: func(s row) error {
				names = append(names, s.ColumnText(0))
				return nil
			}})
	})
	return w, names, err
}
