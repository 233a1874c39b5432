package worktrees

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// Config is what a Service is built from.
type Config struct {
	DB   *store.DB
	Team *team.Service
	// Home is the daemon's home; worktrees live under Home/worktrees.
	Home string
	Log  hclog.Logger
}

// Queue is the merge queue (host/mergequeue), as integrate and the bus
// listener use it.
type Queue interface {
	// Enqueue is Integrate for a workspace with checks: it puts key's
	// branch in target's merge queue and answers at once.
	Enqueue(ctx context.Context, wf store.Workflow, key store.AgentKey, by, target string) (tools.IntegrateResult, error)
	// Kick wakes the queue: a workflow resumed or reloaded.
	Kick()
}

// Service makes, reports, merges and removes the agents' worktrees.
type Service struct {
	db   *store.DB
	team *team.Service
	root string
	log  hclog.Logger
	// queue is the merge queue UseQueue was given; nil until then.
	queue Queue

	// mu guards the fields that follow.
	mu sync.Mutex
	// repos holds one lock per repository, held while git works in it, so
	// two agents' first runs, an integrate and a cleanup never interleave
	// their git commands.
	repos map[string]*sync.Mutex
	// gitDirs caches each repository's common git directory, which every
	// run start compares its worktree's with.
	gitDirs map[string]string
}

// New returns a Service; Run tidies up after agents that stop.
func New(cfg Config) *Service {
	return &Service{db: cfg.DB, team: cfg.Team, root: filepath.Join(cfg.Home, "worktrees"), log: cfg.Log, repos: map[string]*sync.Mutex{}, gitDirs: map[string]string{}}
}

// UseQueue hands s the merge queue its integrates of a workspace with
// checks go to. It is called once, before s serves anything.
func (s *Service) UseQueue(q Queue) { s.queue = q }

// gitTimeout bounds the git work done under one lock (hooks included).
const gitTimeout = 2 * time.Minute

// lock takes repo's lock and returns the context the git work under it
// runs in, and the lock's release. That context outlives the caller's: a
// client that hangs up, or a run cancelled while its worktree is being
// made, never leaves git half done (a worktree half made, a ref half
// moved); gitTimeout bounds it instead.
func (s *Service) lock(ctx context.Context, repo string) (context.Context, func()) {
	s.mu.Lock()
	m := s.repos[repo]
	if m == nil {
		m = &sync.Mutex{}
		s.repos[repo] = m
	}
	s.mu.Unlock()
	m.Lock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gitTimeout)
	return ctx, func() { cancel(); m.Unlock() }
}

// Path is where agent key's worktree lives: outside the user's working
// tree, so their `git status` never lists the agents' copies.
func (s *Service) Path(key store.AgentKey) string {
	return filepath.Join(s.root, key.Workflow, key.Tag, key.Name)
}

// path is where agent key's worktree of wf's repository lives: Path for
// the workflow's own, <agent>@<repo> beside it for one of its repos (an
// agent's name has no @).
func (s *Service) path(wf store.Workflow, key store.AgentKey) string {
	if wf.Within == "" {
		return s.Path(key)
	}
	return s.Path(key) + "@" + wf.Within
}

// RepoDirs are the workspace repositories of a run of agent in wf, as the
// run request carries them: a plain one at its path, a git one at the
// agent's own worktree of it, made from its base before the agent's
// first run and reused after.
func (s *Service) RepoDirs(ctx context.Context, wf store.Workflow, agent string) ([]backend.Repo, error) {
	if len(wf.Repos) == 0 {
		return nil, nil
	}
	key := store.AgentKey{Workflow: wf.Name, Tag: wf.Tag, Name: agent}
	if err := api.ValidateAgentName(agent); err != nil {
		return nil, err
	}
	out := make([]backend.Repo, 0, len(wf.Repos))
	for _, r := range wf.Repos {
		if !r.Git {
			out = append(out, backend.Repo{Name: r.Name, Path: r.Path, Write: r.Write})
			continue
		}
		v, err := wf.InRepo(r.Name)
		if err != nil {
			return nil, err
		}
		dir, err := s.ensureLocked(ctx, v, key)
		if err != nil {
			return nil, fmt.Errorf("%s's git worktree of repository %s: %w", key, r.Name, err)
		}
		out = append(out, backend.Repo{Name: r.Name, Path: dir, Write: true})
	}
	return out, nil
}

// ensureLocked is ensure under the repository's lock.
func (s *Service) ensureLocked(ctx context.Context, wf store.Workflow, key store.AgentKey) (string, error) {
	ctx, unlock := s.lock(ctx, wf.WorkspaceRepo)
	defer unlock()
	return s.ensure(ctx, wf, key)
}

// ProjectDir is the working directory of a run of agent in wf: its
// worktree, made from the base before its first run and reused after
// (across restarts too). ok is false for a workflow without a git
// workspace, whose agents work in the workflow's directory.
func (s *Service) ProjectDir(ctx context.Context, wf store.Workflow, agent string) (dir string, ok bool, err error) {
	if wf.WorkspaceRepo == "" {
		return "", false, nil
	}
	key := store.AgentKey{Workflow: wf.Name, Tag: wf.Tag, Name: agent}
	if err := api.ValidateAgentName(agent); err != nil {
		return "", true, err
	}
	dir, err = s.ensureLocked(ctx, wf, key)
	if err != nil {
		return "", true, fmt.Errorf("%s's git worktree: %w", key, err)
	}
	return dir, true, nil
}

// ensure makes key's worktree unless it is there. Reusing one takes only
// that it is a worktree of the same repository: the agent may have
// switched branches in it, which is its business.
func (s *Service) ensure(ctx context.Context, wf store.Workflow, key store.AgentKey) (string, error) {
	path, branch := s.path(wf, key), workflow.BranchName(key.Workflow, key.Tag, key.Name)
	switch ok, err := s.isWorktree(ctx, wf.WorkspaceRepo, path); {
	case err != nil:
		return "", err
	case ok:
		return path, nil
	}
	if entries, err := os.ReadDir(path); err == nil {
		if len(entries) > 0 {
			return "", api.Errorf(api.CodeConflict, "%s is in the way: it is not a git worktree of %s; move it away and the next run makes the worktree", path, wf.WorkspaceRepo)
		}
		_ = os.Remove(path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	// A worktree whose directory was deleted is still registered, and
	// its branch counts as checked out there until it is pruned.
	if _, err := git(ctx, wf.WorkspaceRepo, "worktree", "prune"); err != nil {
		return "", err
	}
	head, err := revParse(ctx, wf.WorkspaceRepo, branchRef(branch))
	if err != nil {
		return "", err
	}
	args := []string{"worktree", "add", path, branch} // a kept branch: back in a worktree, commits and all
	if head == "" {
		args = []string{"worktree", "add", "-b", branch, path, branchRef(wf.WorkspaceBase)}
	}
	if _, err := git(ctx, wf.WorkspaceRepo, args...); err != nil {
		return "", err
	}
	s.log.Info("worktree made", "agent", key.String(), "path", path, "branch", branch, "base", wf.WorkspaceBase, "reused_branch", head != "")
	return path, nil
}

// isWorktree says whether path is a worktree of repo. A directory that is
// not one, or is one of another repository, is not.
func (s *Service) isWorktree(ctx context.Context, repo, path string) (bool, error) {
	if _, err := os.Lstat(filepath.Join(path, ".git")); err != nil {
		return false, nil
	}
	mine, err := commonDir(ctx, path)
	if err != nil {
		return false, nil // a broken .git file: in the way, like any other content
	}
	theirs, err := s.repoGitDir(ctx, repo)
	if err != nil {
		return false, err
	}
	return mine == theirs, nil
}

// repoGitDir is repo's common git directory, asked of git once.
func (s *Service) repoGitDir(ctx context.Context, repo string) (string, error) {
	s.mu.Lock()
	dir, ok := s.gitDirs[repo]
	s.mu.Unlock()
	if ok {
		return dir, nil
	}
	dir, err := commonDir(ctx, repo)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.gitDirs[repo] = dir
	s.mu.Unlock()
	return dir, nil
}

func commonDir(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(out); err == nil {
		out = real
	}
	return filepath.Clean(out), nil
}

// workspace reads scope's workflow and refuses one without a git workspace.
func (s *Service) workspace(ctx context.Context, scope store.Scope) (store.Workflow, error) {
	wf, err := s.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if api.ErrorCode(err) == api.CodeNotFound {
		return wf, api.Errorf(api.CodeNotFound, "no workflow %s: `agent-worker workflows` lists them", display(scope))
	}
	if err != nil {
		return wf, err
	}
	if len(wf.Views()) == 0 {
		return wf, api.Errorf(api.CodeInvalid, "%s has no git workspace: its agents work in %s; add workspace: {git: worktree} to its file to give each a worktree",
			display(scope), wf.Workdir)
	}
	return wf, nil
}

func display(scope store.Scope) string {
	return api.Target{Workflow: scope.Workflow, Tag: scope.Tag}.Display()
}

// List reports the worktrees of every workflow with a git workspace,
// stopped ones included (what they kept); Status reports one workflow's.
func (s *Service) List(ctx context.Context) ([]tools.Worktree, error) {
	all, err := s.db.ListWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	out := []tools.Worktree{}
	for _, wf := range all {
		for _, v := range wf.Views() {
			ws, err := s.status(ctx, v, "")
			if err != nil {
				return nil, err
			}
			out = append(out, ws...)
		}
	}
	return out, nil
}

// Status reports agent's worktree in scope, or with agent "" every
// agent's, and the kept branches of agents that are gone.
func (s *Service) Status(ctx context.Context, scope store.Scope, agent string) ([]tools.Worktree, error) {
	if agent != "" {
		if err := api.ValidateAgentName(agent); err != nil {
			return nil, err
		}
	}
	wf, err := s.workspace(ctx, scope)
	if err != nil {
		return nil, err
	}
	out := []tools.Worktree{}
	for _, v := range wf.Views() {
		ws, err := s.status(ctx, v, agent)
		if err != nil {
			return nil, err
		}
		out = append(out, ws...)
	}
	return out, nil
}

func (s *Service) status(ctx context.Context, wf store.Workflow, only string) ([]tools.Worktree, error) {
	scope := store.Scope{Workflow: wf.Name, Tag: wf.Tag}
	members, err := s.db.ListAgents(ctx, store.AgentFilter{Workflow: wf.Name, Tag: wf.Tag})
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	var names []string
	for _, a := range members {
		live[a.Name] = a.State != api.AgentStopped && wf.State.Live()
		names = append(names, a.Name)
	}
	// Under the repository's lock: a worktree being made (its first run
	// starting) has no HEAD until `git worktree add` is done, and git
	// status in it fails with "bad object HEAD".
	ctx, unlock := s.lock(ctx, wf.WorkspaceRepo)
	defer unlock()
	branches, err := s.branches(ctx, wf)
	if err != nil {
		return nil, err
	}
	for name := range branches {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if only != "" {
		if !slices.Contains(names, only) {
			return nil, api.Errorf(api.CodeNotFound, "%s has no agent %s and no branch %s: worktree_status without an agent, or `agent-worker worktree list %s`, lists the worktrees there are",
				display(scope), only, workflow.BranchName(wf.Name, wf.Tag, only), display(scope))
		}
		names = []string{only}
	}
	queued, err := s.db.ListQueue(ctx, store.QueueFilter{Scope: &scope})
	if err != nil {
		return nil, err
	}
	out := []tools.Worktree{}
	for _, name := range names {
		w, err := s.describe(ctx, wf, name)
		if err != nil {
			return nil, err
		}
		for _, e := range queued {
			if e.Branch == w.Branch && e.Repo == wf.Within && w.QueueID == "" {
				w.QueueID, w.QueueState = e.ID, e.State
			}
		}
		switch {
		case live[name] && w.Path == "" && !branches[name]:
			w.State = tools.WorktreeNone
		case live[name]:
			w.State = tools.WorktreeActive
		case w.Path == "" && !branches[name]:
			continue // stopped and tidied: nothing left to show
		default:
			w.State = tools.WorktreeKept
			w.KeptBecause = keptBecause(w)
		}
		out = append(out, w)
	}
	return out, nil
}

// keptBecause words why a worktree outlived its agent.
func keptBecause(w tools.Worktree) string {
	var why []string
	if w.Ahead > 0 {
		why = append(why, fmt.Sprintf("%d commit%s not merged into %s", w.Ahead, plural(w.Ahead), w.Base))
	}
	if n := len(w.Changed); n > 0 {
		why = append(why, fmt.Sprintf("%d uncommitted change%s", n, plural(n)))
	}
	if len(why) == 0 {
		return "its agent's run has not ended yet, or the cleanup failed (see the daemon log)"
	}
	return strings.Join(why, " and ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// branches lists the agents that have a branch in wf's repository.
func (s *Service) branches(ctx context.Context, wf store.Workflow) (map[string]bool, error) {
	prefix := branchRef(workflow.BranchName(wf.Name, wf.Tag, ""))
	out, err := git(ctx, wf.WorkspaceRepo, "for-each-ref", "--format=%(refname)", prefix)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, ref := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(ref, prefix); ok && name != "" && !strings.Contains(name, "/") {
			names[name] = true
		}
	}
	return names, nil
}

// describe reads what git knows of agent's branch and worktree; State is
// the caller's to set.
func (s *Service) describe(ctx context.Context, wf store.Workflow, agent string) (tools.Worktree, error) {
	key := store.AgentKey{Workflow: wf.Name, Tag: wf.Tag, Name: agent}
	branch := workflow.BranchName(wf.Name, wf.Tag, agent)
	w := tools.Worktree{Agent: agent, Workflow: wf.Name, Tag: wf.Tag, Repo: wf.Within, Branch: branch, Base: wf.WorkspaceBase, Changed: []tools.FileChange{}}
	if ok, err := s.isWorktree(ctx, wf.WorkspaceRepo, s.path(wf, key)); err != nil {
		return w, err
	} else if ok {
		w.Path = s.path(wf, key)
		if w.Changed, err = changes(ctx, w.Path); err != nil {
			return w, err
		}
	}
	head, err := revParse(ctx, wf.WorkspaceRepo, branchRef(branch))
	if err != nil || head == "" {
		return w, err
	}
	if w.Ahead, w.Behind, err = aheadBehind(ctx, wf.WorkspaceRepo, wf.WorkspaceBase, branch); err != nil {
		return w, err
	}
	w.LastCommit, err = lastCommit(ctx, wf.WorkspaceRepo, head)
	return w, err
}

// changes lists a worktree's uncommitted changes, untracked files included.
func changes(ctx context.Context, dir string) ([]tools.FileChange, error) {
	out, err := git(ctx, dir, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	cs := []tools.FileChange{}
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		c := tools.FileChange{Status: f[:2], Path: f[3:]}
		if c.Status[0] == 'R' || c.Status[0] == 'C' {
			i++ // the rename's source follows
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// aheadBehind counts the commits branch has that base lacks, and back.
func aheadBehind(ctx context.Context, repo, base, branch string) (ahead, behind int, err error) {
	out, err := git(ctx, repo, "rev-list", "--left-right", "--count", branchRef(base)+"..."+branchRef(branch))
	if exitCode(err) == 128 {
		return 0, 0, nil // the base is gone: nothing to compare with
	}
	if err != nil {
		return 0, 0, err
	}
	left, right, _ := strings.Cut(out, "\t")
	behind, _ = strconv.Atoi(strings.TrimSpace(left))
	ahead, _ = strconv.Atoi(strings.TrimSpace(right))
	return ahead, behind, nil
}

func lastCommit(ctx context.Context, repo, sha string) (*tools.Commit, error) {
	out, err := git(ctx, repo, "log", "-1", "--format=%H%x00%s%x00%an%x00%aI", sha)
	if err != nil {
		return nil, err
	}
	parts := strings.SplitN(out, "\x00", 4)
	if len(parts) < 4 {
		return nil, errors.New("git log: unexpected output " + strconv.Quote(out))
	}
	when, _ := time.Parse(time.RFC3339, parts[3])
	return &tools.Commit{SHA: parts[0], Subject: parts[1], Author: parts[2], Time: when}, nil
}

// Settings is the workspace of wf's file as it is now: checks, timeout
// and batch come from the stored file, so an edit applies from the next
// batch. A workflow without a file (tests) has none.
func Settings(wf store.Workflow) (*workflow.Workspace, error) {
	if strings.TrimSpace(wf.ConfigYAML) == "" {
		return nil, nil
	}
	f, err := workflow.Parse(wf.SourcePath, []byte(wf.ConfigYAML))
	if err != nil {
		return nil, fmt.Errorf("read the workspace's checks from %s: %w", wf.SourcePath, err)
	}
	return f.Workspace.Settings(wf.Within), nil
}
