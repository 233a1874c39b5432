package mergequeue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/host/worktrees"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// The merge queue. A workspace with checks: sends every integrate here
// instead of merging at once. The store keeps the entries and their
// states; RunQueue takes a batch of a queue at a time, merges it onto the
// base in the object store (merge-tree, commit-tree, as integrate does),
// runs the checks on the result in a scratch worktree, and moves the base
// only when they pass. A failing batch is bisected over its prefixes:
// the shortest failing prefix names the culprit, the prefix before it
// (which passed) lands, the entries after it go back in line.
//
// Landing is recorded before the base moves (state landing, with the
// base's old commit and the merge it moves to) and finished after, so a
// daemon that dies in between settles it on its next start by asking git
// where the base is: moved already (landed), not moved (move it now), or
// moved elsewhere (check again). Nothing lands twice: an entry leaves
// landing exactly once, and a branch already contained in the base is
// recorded as landed without another merge.

// QueueObserver hears what the merge queue does (host/metrics).
type QueueObserver interface {
	// QueueEnded counts an entry that landed or failed, after waited in
	// the queue.
	QueueEnded(workflow string, state api.QueueState, waited time.Duration)
	// CheckRan times one check command; ok is its exit status 0.
	CheckRan(workflow string, d time.Duration, ok bool)
}

// queuePoll is how often RunQueue looks at the store without being woken,
// a safety net for entries another process wrote.
const queuePoll = time.Minute

// tailLines and tailChars bound the output a failure message quotes.
const (
	tailLines = 15
	tailChars = 1500
)

// Enqueue is Integrate for a workspace with checks (worktrees.Queue): it puts key's branch
// in target's merge queue and answers at once with the entry's id. A
// branch already contained in target is answered as integrate does
// (nothing to merge), and queues nothing.
func (s *Service) Enqueue(ctx context.Context, wf store.Workflow, key store.AgentKey, by, target string) (tools.IntegrateResult, error) {
	branch := workflow.BranchName(key.Workflow, key.Tag, key.Name)
	res := tools.IntegrateResult{Agent: key.Name, Repo: wf.Within, Branch: branch, Target: target, Files: []string{}}
	if target == branch {
		return res, api.Errorf(api.CodeInvalid, "cannot integrate %s into itself: name another target", branch)
	}
	repo := wf.WorkspaceRepo
	lctx, unlock := s.lock(ctx, repo)
	src, err := revParse(lctx, repo, branchRef(branch))
	var old string
	if err == nil {
		old, err = revParse(lctx, repo, branchRef(target))
	}
	contained := false
	if err == nil && src != "" && old != "" {
		_, cerr := git(lctx, repo, "merge-base", "--is-ancestor", src, old)
		contained = cerr == nil
		if cerr != nil && exitCode(cerr) != 1 {
			err = cerr
		}
	}
	unlock()
	switch {
	case err != nil:
		return res, err
	case src == "":
		return res, api.Errorf(api.CodeNotFound, "%s has no branch %s: its worktree is made before its first run", key, branch)
	case old == "":
		return res, api.Errorf(api.CodeNotFound, "branch %s does not exist in %s: name an existing branch (git branch lists them)", target, repo)
	case contained:
		res.Commit = old
		return res, nil
	}
	e, ahead, err := s.db.Enqueue(ctx, store.QueueEntry{Workflow: key.Workflow, Tag: key.Tag, Repo: wf.Within, Base: target, Agent: key.Name,
		Branch: branch, By: by, Head: src})
	if err != nil {
		return res, err
	}
	res.Queued, res.QueueID, res.Position = true, e.ID, ahead
	s.announce(ctx, key.Scope(), by, fmt.Sprintf("%s's branch %s is in the merge queue of %s as %s (asked by %s; %d ahead of it): it lands when the checks pass.",
		key.Name, branch, target, e.ID, by, ahead))
	s.log.Info("branch queued", "agent", key.String(), "branch", branch, "target", target, "entry", e.ID, "by", by)
	s.kick()
	return res, nil
}

// kick wakes RunQueue.
func (s *Service) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// RunQueue works the merge queues until ctx ends: it first settles what a
// previous daemon left mid-way, then keeps one worker per workflow:tag
// with entries waiting (so one team's long checks never hold another's
// queue, and a team's queues share its scratch worktree one at a time),
// and sleeps until an integrate or a workflow event wakes it. It returns
// once its workers have.
func (s *Service) RunQueue(ctx context.Context) {
	s.reconcile(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	busy := map[store.Scope]bool{}
	// resting are workers that ended in an error (git or the disk in
	// trouble; their batch is back in line): they start again at the
	// next poll rather than spin.
	resting := map[store.Scope]bool{}
	type ended struct {
		scope store.Scope
		err   error
	}
	done := make(chan ended)
	poll := time.NewTicker(queuePoll)
	defer poll.Stop()
	for {
		qs, err := s.db.PendingQueues(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("merge queue", "error", err)
		}
		for _, q := range qs {
			scope := q.Scope()
			if busy[scope] || resting[scope] {
				continue
			}
			busy[scope] = true
			wg.Go(func() {
				err := s.work(ctx, scope)
				select {
				case done <- ended{scope, err}:
				case <-ctx.Done():
				}
			})
		}
		select {
		case <-ctx.Done():
			return
		case e := <-done:
			delete(busy, e.scope)
			if e.err != nil {
				resting[e.scope] = true
			}
		case <-s.wake:
		case <-poll.C:
			clear(resting)
		}
	}
}

// work takes batches of scope's queues until none has entries it can
// take, or a batch errs.
func (s *Service) work(ctx context.Context, scope store.Scope) error {
	for ctx.Err() == nil {
		qs, err := s.db.PendingQueues(ctx)
		if err != nil {
			return err
		}
		worked := false
		for _, q := range qs {
			if q.Scope() != scope {
				continue
			}
			did, err := s.step(ctx, q)
			if err != nil {
				s.log.Warn("merge queue", "workflow", q.Workflow+":"+q.Tag, "base", q.Base, "error", err)
				return err
			}
			worked = worked || did
		}
		if !worked {
			return nil
		}
	}
	return nil
}

// mine says whether this daemon works wf's merge queue: always on the
// embedded store; in a cluster, when it owns wf (it watches its file, and
// the repository is on its machine).
func (s *Service) mine(wf store.Workflow) bool {
	return s.member == "" || wf.Owner == s.member
}

// reconcile settles the entries a daemon that stopped mid-way left: a
// batch being checked goes back in line (its checks run again), and a
// landing is finished by asking git where the base is.
func (s *Service) reconcile(ctx context.Context) {
	checking, err := s.db.EntriesIn(ctx, api.QueueChecking)
	if err == nil {
		var ids []string
		for _, e := range checking {
			if wf, err := s.db.GetWorkflow(ctx, e.Workflow, e.Tag); err != nil || s.mine(wf) {
				ids = append(ids, e.ID)
			}
		}
		err = s.db.Requeue(ctx, ids, api.QueueChecking)
		if len(ids) > 0 {
			s.log.Info("merge queue: entries checked when the daemon stopped are checked again", "entries", strings.Join(ids, ","))
		}
	}
	if err != nil {
		s.log.Warn("merge queue: reconcile", "error", err)
	}
	landing, err := s.db.EntriesIn(ctx, api.QueueLanding)
	if err != nil {
		s.log.Warn("merge queue: reconcile", "error", err)
		return
	}
	groups := map[store.QueueKey][]store.QueueEntry{}
	var order []store.QueueKey
	for _, e := range landing {
		if _, ok := groups[e.Queue()]; !ok {
			order = append(order, e.Queue())
		}
		groups[e.Queue()] = append(groups[e.Queue()], e)
	}
	for _, q := range order {
		if err := s.resumeLanding(ctx, q, groups[q]); err != nil {
			s.log.Warn("merge queue: finish landing", "workflow", q.Workflow+":"+q.Tag, "base", q.Base, "error", err)
		}
	}
}

// resumeLanding finishes the landing of es (one queue's, in order, all
// recorded against the same old base) after a restart.
func (s *Service) resumeLanding(ctx context.Context, q store.QueueKey, es []store.QueueEntry) error {
	wf, err := s.db.GetWorkflow(ctx, q.Workflow, q.Tag)
	if err != nil || !s.mine(wf) {
		return err
	}
	if wf, err = wf.InRepo(q.Repo); err != nil {
		return err
	}
	tip, old := es[len(es)-1].Commit, es[len(es)-1].BaseCommit
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	repo := wf.WorkspaceRepo
	lctx, unlock := s.lock(ctx, repo)
	cur, err := revParse(lctx, repo, branchRef(q.Base))
	landed := false
	if err == nil && cur != "" {
		if _, aerr := git(lctx, repo, "merge-base", "--is-ancestor", tip, cur); aerr == nil {
			landed = true // the base was moved before the daemon stopped
		} else if cur == old {
			err = s.moveBranch(lctx, repo, q.Base, old, tip, "merge queue "+strings.Join(ids, ","))
			landed = err == nil
		}
	}
	unlock()
	if err != nil || !landed {
		s.log.Info("merge queue: a landing cut short is checked again", "entries", strings.Join(ids, ","), "error", err)
		return s.db.Requeue(ctx, ids, api.QueueLanding)
	}
	s.log.Info("merge queue: landing finished after a restart", "entries", strings.Join(ids, ","), "commit", tip)
	for _, e := range es {
		s.landed(ctx, wf, e, e.Commit, false)
	}
	return nil
}

// link is one entry of a batch merged onto the chain: the branch's head
// and the chain's commit after it (the base's, for a branch contained in
// it already).
type link struct {
	entry  store.QueueEntry
	head   string
	commit string
}

// step takes one batch of q and sees it through; did is false when q had
// nothing to take.
func (s *Service) step(ctx context.Context, q store.QueueKey) (did bool, err error) {
	wf, err := s.db.GetWorkflow(ctx, q.Workflow, q.Tag)
	if err == nil {
		wf, err = wf.InRepo(q.Repo)
	}
	if api.ErrorCode(err) == api.CodeNotFound || api.ErrorCode(err) == api.CodeInvalid {
		return s.failAll(ctx, q, "the workflow no longer has this git workspace")
	}
	if err != nil {
		return false, err
	}
	if !s.mine(wf) {
		return false, nil // another cluster member's
	}
	if wf.State == api.WorkflowPaused {
		return false, nil // a paused team's queue waits with it; resume wakes it
	}
	ws, err := worktrees.Settings(wf)
	if err != nil {
		return false, err
	}
	batch, err := s.db.TakeBatch(ctx, q, ws.BatchSize())
	if err != nil || len(batch) == 0 {
		return false, err
	}
	var checks []string
	var timeout time.Duration
	if ws != nil {
		checks, timeout = ws.Checks, ws.Timeout()
	}
	return true, s.runBatch(ctx, wf, q, batch, checks, timeout)
}

// failAll fails every queued entry of q for why.
func (s *Service) failAll(ctx context.Context, q store.QueueKey, why string) (bool, error) {
	es, err := s.db.ListQueue(ctx, store.QueueFilter{Queue: &q})
	if err != nil {
		return false, err
	}
	for _, e := range es {
		s.fail(ctx, store.Workflow{Name: q.Workflow, Tag: q.Tag}, e, store.QueueOutcome{State: api.QueueFailed, Reason: why}, api.QueueQueued, api.QueueChecking)
	}
	return len(es) > 0, nil
}

// runBatch merges batch onto q's base, checks the result, and lands,
// bisects or fails it.
func (s *Service) runBatch(ctx context.Context, wf store.Workflow, q store.QueueKey, batch []store.QueueEntry, checks []string, timeout time.Duration) error {
	repo := wf.WorkspaceRepo
	lctx, unlock := s.lock(ctx, repo)
	base, err := revParse(lctx, repo, branchRef(q.Base))
	var chain []link
	var dropped []droppedEntry
	if err == nil && base != "" {
		chain, dropped, err = s.merge(lctx, repo, q.Base, base, batch)
	}
	unlock()
	if err != nil {
		_ = s.db.Requeue(context.WithoutCancel(ctx), ids(batch), api.QueueChecking)
		return err
	}
	if base == "" {
		for _, e := range batch {
			s.fail(ctx, wf, e, store.QueueOutcome{State: api.QueueFailed, Reason: fmt.Sprintf("the base branch %s does not exist any more", q.Base)}, api.QueueChecking)
		}
		return nil
	}
	for _, d := range dropped {
		s.fail(ctx, wf, d.entry, d.outcome, api.QueueChecking)
	}
	if len(chain) == 0 {
		return nil
	}
	if chain[len(chain)-1].commit == base {
		return s.land(ctx, wf, q, base, chain) // every branch is on the base already: nothing to check
	}
	run, err := s.check(ctx, wf, chain, checks, timeout)
	if err != nil {
		_ = s.db.Requeue(context.WithoutCancel(ctx), ids(entries(chain)), api.QueueChecking)
		return err
	}
	if run.passed {
		return s.land(ctx, wf, q, base, chain)
	}
	// Bisect over prefixes: the whole chain fails; find the shortest
	// prefix that does (taking a prefix that passes to mean its own
	// prefixes pass too). The prefix just before it, when there is one,
	// was checked and passed, so it can land.
	lo, hi, failing := 1, len(chain), run
	for lo < hi {
		mid := (lo + hi) / 2
		r, err := s.check(ctx, wf, chain[:mid], checks, timeout)
		if err != nil {
			_ = s.db.Requeue(context.WithoutCancel(ctx), ids(entries(chain)), api.QueueChecking)
			return err
		}
		if r.passed {
			lo = mid + 1
		} else {
			hi, failing = mid, r
		}
	}
	culprit := chain[lo-1]
	if err := s.db.Requeue(ctx, ids(entries(chain[lo:])), api.QueueChecking); err != nil {
		return err
	}
	// The culprit's entry stays checking while the prefix lands, so
	// the queue takes no new batch in between; then it fails.
	var landErr error
	if lo > 1 {
		landErr = s.land(ctx, wf, q, base, chain[:lo-1])
	}
	s.fail(ctx, wf, culprit.entry, failure(q, chain[:lo-1], culprit, failing), api.QueueChecking)
	return landErr
}

// droppedEntry is an entry merge could not put on the chain, and why.
type droppedEntry struct {
	entry   store.QueueEntry
	outcome store.QueueOutcome
}

// merge merges batch's branches one after the other onto base, in the
// object store: the chain of merge commits, and the entries dropped from
// it (a conflict with the base or an entry ahead, or a branch gone). A
// branch contained in the chain already is a link without a merge.
func (s *Service) merge(ctx context.Context, repo, target, base string, batch []store.QueueEntry) ([]link, []droppedEntry, error) {
	var chain []link
	var dropped []droppedEntry
	cur := base
	for _, e := range batch {
		src, err := revParse(ctx, repo, branchRef(e.Branch))
		if err != nil {
			return nil, nil, err
		}
		if src == "" {
			dropped = append(dropped, droppedEntry{e, store.QueueOutcome{State: api.QueueFailed, Reason: fmt.Sprintf("branch %s does not exist any more", e.Branch)}})
			continue
		}
		if _, err := git(ctx, repo, "merge-base", "--is-ancestor", src, cur); err == nil {
			chain = append(chain, link{entry: e, head: src, commit: cur})
			continue
		} else if exitCode(err) != 1 {
			return nil, nil, err
		}
		out, err := git(ctx, repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", cur, src)
		fields := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
		switch exitCode(err) {
		case -1, 0:
			if err != nil {
				return nil, nil, err
			}
		case 1:
			files := dedupe(fields[1:])
			with := target
			if len(chain) > 0 {
				with = fmt.Sprintf("%s with %s merged ahead of it", target, strings.Join(ids(entries(chain)), ", "))
			}
			dropped = append(dropped, droppedEntry{e, store.QueueOutcome{State: api.QueueFailed, Files: files,
				Reason: fmt.Sprintf("merging %s into %s conflicts in %d file%s: %s", e.Branch, with, len(files), plural(len(files)), listFiles(files))}})
			continue
		default:
			return nil, nil, err
		}
		msg := fmt.Sprintf("Merge branch '%s' into %s\n\nLanded by the merge queue of agent-worker (%s, asked by %s) after its checks passed.\n",
			e.Branch, target, e.ID, e.By)
		commit, err := gitIn(ctx, repo, []byte(msg), "commit-tree", fields[0], "-p", cur, "-p", src)
		if err != nil {
			return nil, nil, err
		}
		if err := s.db.SetQueueHead(ctx, e.ID, src); err != nil {
			return nil, nil, err
		}
		chain = append(chain, link{entry: e, head: src, commit: commit})
		cur = commit
	}
	return chain, dropped, nil
}

// land moves q's base from base to the chain's last commit: recorded as
// landing first, then the ref moved, then each entry landed. A base that
// moved meanwhile puts the chain back in line; a move git refuses (the
// checkout has uncommitted changes) fails it with git's reason.
func (s *Service) land(ctx context.Context, wf store.Workflow, q store.QueueKey, base string, chain []link) error {
	commits := make([]string, len(chain))
	for i, l := range chain {
		commits[i] = l.commit
	}
	n, err := s.db.MarkLanding(ctx, base, ids(entries(chain)), commits)
	if err != nil {
		return err
	}
	// An entry dequeued during its check cuts the chain there: the
	// entries behind it were merged on top of it, so they are checked
	// again without it.
	if err := s.db.Requeue(ctx, ids(entries(chain[n:])), api.QueueChecking); err != nil || n == 0 {
		return err
	}
	chain = chain[:n]
	tip := chain[n-1].commit
	names := ids(entries(chain))
	repo := wf.WorkspaceRepo
	lctx, unlock := s.lock(ctx, repo)
	err = nil
	if tip != base {
		err = s.moveBranch(lctx, repo, q.Base, base, tip, "merge queue "+strings.Join(names, ","))
	}
	var cur string
	if err != nil {
		cur, _ = revParse(lctx, repo, branchRef(q.Base))
	}
	unlock()
	if err != nil {
		if cur != base {
			s.log.Info("merge queue: the base moved during the checks; checking again", "base", q.Base, "entries", strings.Join(names, ","))
			return s.db.Requeue(ctx, names, api.QueueLanding)
		}
		for _, l := range chain {
			s.fail(ctx, wf, l.entry, store.QueueOutcome{State: api.QueueFailed, Reason: "the checks passed, but " + err.Error()}, api.QueueLanding)
		}
		return nil
	}
	for _, l := range chain {
		s.landed(ctx, wf, l.entry, l.commit, l.commit == base)
	}
	return nil
}

// landed records e as landed with commit and tells the team.
func (s *Service) landed(ctx context.Context, wf store.Workflow, e store.QueueEntry, commit string, already bool) {
	line := fmt.Sprintf("%s %s landed on %s as commit %s: %s's branch %s passed the checks (asked by %s).",
		mentions(e), e.ID, e.Base, short(commit), e.Agent, e.Branch, e.By)
	if already {
		line = fmt.Sprintf("%s %s: %s's branch %s was on %s already (commit %s); nothing to merge.", mentions(e), e.ID, e.Agent, e.Branch, e.Base, short(commit))
	}
	o := store.QueueOutcome{State: api.QueueLanded, Commit: commit, Line: s.line(ctx, scopeOf(wf), e.By, line)}
	got, ok := s.finish(ctx, e, o, api.QueueLanding)
	if !ok {
		return
	}
	s.log.Info("merge queue: landed", "entry", got.ID, "branch", got.Branch, "base", got.Base, "commit", commit)
	if s.stopped(ctx, got.Key()) {
		s.wt.Release(ctx, got.Key().Scope())
	}
}

// fail records e as failed (or removed) with o, if it is in one of from,
// and tells the team.
func (s *Service) fail(ctx context.Context, wf store.Workflow, e store.QueueEntry, o store.QueueOutcome, from ...api.QueueState) {
	line := fmt.Sprintf("%s %s failed: %s's branch %s was not merged into %s: %s.", mentions(e), e.ID, e.Agent, e.Branch, e.Base, o.Reason)
	if o.Command != "" {
		line += "\nLast lines of its output:\n```\n" + outputTail(o.Output) + "\n```"
	}
	line += fmt.Sprintf("\nMend the branch and integrate again; `agent-worker worktree queue show %s` has the full log.", e.ID)
	o.Line = s.line(ctx, scopeOf(wf), e.By, line)
	got, ok := s.finish(ctx, e, o, from...)
	if !ok {
		return
	}
	s.log.Info("merge queue: failed", "entry", got.ID, "branch", got.Branch, "base", got.Base, "reason", o.Reason)
}

// line composes a system line for scope about what by asked for, as
// announce would post it; nil (the outcome is still recorded) when it
// cannot be composed, which is logged.
func (s *Service) line(ctx context.Context, scope store.Scope, by, content string) *store.NewMessage {
	m, err := s.team.Compose(ctx, team.SendRequest{Scope: scope, From: team.SenderSystem, Kind: store.KindSystem, Content: content, ByAgent: by != team.SenderUser})
	if err != nil {
		s.log.Warn("merge queue: compose the channel line", "workflow", scope.String(), "error", err)
		return nil
	}
	return &m
}

// finish records e's outcome o (with its channel line) if e is in one of
// from, then announces the line and counts the outcome.
func (s *Service) finish(ctx context.Context, e store.QueueEntry, o store.QueueOutcome, from ...api.QueueState) (store.QueueEntry, bool) {
	got, msg, ok, err := s.db.FinishQueueEntry(context.WithoutCancel(ctx), e.ID, o, from...)
	if err != nil {
		s.log.Warn("merge queue: record the outcome", "entry", e.ID, "state", o.State, "error", err)
		return got, false
	}
	if !ok {
		return got, false
	}
	if msg != nil {
		s.team.Announce(*msg)
	}
	s.observe(got)
	return got, true
}

func (s *Service) observe(e store.QueueEntry) {
	if s.observer != nil {
		s.observer.QueueEnded(e.Workflow, e.State, e.EndedAt.Sub(e.CreatedAt))
	}
}

// failure is the outcome of culprit, whose merge after ahead made the
// checks fail (run).
func failure(q store.QueueKey, ahead []link, culprit link, run checkRun) store.QueueOutcome {
	onto := q.Base
	if len(ahead) > 0 {
		onto = fmt.Sprintf("%s with %s merged ahead of it (which passed without it)", q.Base, strings.Join(ids(entries(ahead)), ", "))
	}
	how := fmt.Sprintf("exited with status %d", run.failed.ExitCode)
	if run.failed.TimedOut {
		how = "ran out of time (check_timeout)"
	}
	return store.QueueOutcome{State: api.QueueFailed, Command: run.failed.Command, Output: run.failed.Output,
		Reason: fmt.Sprintf("the check `%s` %s when it was merged onto %s", run.failed.Command, how, onto)}
}

// mentions wakes the branch's agent and the planner who asked.
func mentions(e store.QueueEntry) string {
	m := "@" + e.Agent
	if e.By != team.SenderUser && e.By != e.Agent && e.By != "" {
		m += " @" + e.By
	}
	return m
}

// outputTail is the end of a check's output, short enough for a message.
func outputTail(out string) string {
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return "(no output)"
	}
	lines := strings.Split(out, "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	t := strings.Join(lines, "\n")
	if len(t) > tailChars {
		t = "…" + t[len(t)-tailChars:]
	}
	return strings.ReplaceAll(t, "```", "'''")
}

func entries(chain []link) []store.QueueEntry {
	out := make([]store.QueueEntry, len(chain))
	for i, l := range chain {
		out[i] = l.entry
	}
	return out
}

func ids(es []store.QueueEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// Queue lists scope's merge queue entries: those on their way, and with
// all the newest finished ones too.
func (s *Service) Queue(ctx context.Context, scope *store.Scope, all bool) ([]tools.QueueEntry, error) {
	if scope != nil {
		if _, err := s.workspace(ctx, *scope); err != nil {
			return nil, err
		}
	}
	es, err := s.db.ListQueue(ctx, store.QueueFilter{Scope: scope, All: all})
	if err != nil {
		return nil, err
	}
	out := make([]tools.QueueEntry, len(es))
	ahead := map[store.QueueKey]int{}
	for i, e := range es {
		out[i] = apiEntry(e)
		if e.State.Pending() {
			out[i].Position = ahead[e.Queue()]
			ahead[e.Queue()]++
		}
	}
	return out, nil
}

// QueueEntry is one entry with the logs of every check run it was part
// of.
func (s *Service) QueueEntry(ctx context.Context, id string) (tools.QueueEntry, error) {
	e, checks, err := s.db.GetQueueEntry(ctx, id)
	if err != nil {
		return tools.QueueEntry{}, err
	}
	out := apiEntry(e)
	out.Checks = make([]tools.QueueCheck, len(checks))
	for i, c := range checks {
		out.Checks[i] = tools.QueueCheck{Batch: c.Batch, Command: c.Command, ExitCode: c.ExitCode, TimedOut: c.TimedOut,
			DurationMS: c.DurationMS, Output: c.Output, At: c.At}
	}
	return out, nil
}

// Dequeue takes entry id out of its queue, as the user (by), for reason;
// one being checked is dropped when its check ends. A posted line says so.
func (s *Service) Dequeue(ctx context.Context, id, by, reason string) (tools.QueueEntry, error) {
	cur, _, err := s.db.GetQueueEntry(ctx, id)
	if err != nil {
		return tools.QueueEntry{}, err
	}
	why := "removed by " + by
	if strings.TrimSpace(reason) != "" {
		why += ": " + reason
	}
	line := s.line(ctx, cur.Key().Scope(), by, fmt.Sprintf("@%s %s was taken out of the merge queue of %s (%s); %s was not merged.", cur.Agent, cur.ID, cur.Base, why, cur.Branch))
	e, msg, err := s.db.Dequeue(ctx, id, by, reason, line)
	if err != nil {
		return tools.QueueEntry{}, err
	}
	if msg != nil {
		s.team.Announce(*msg)
	}
	s.observe(e)
	return apiEntry(e), nil
}

func apiEntry(e store.QueueEntry) tools.QueueEntry {
	return tools.QueueEntry{ID: e.ID, Workflow: e.Workflow, Tag: e.Tag, Agent: e.Agent, Branch: e.Branch, Base: e.Base, State: e.State,
		By: e.By, Head: e.Head, Commit: e.Commit, Command: e.Command, Output: e.Output, Reason: e.Reason, Files: e.Files,
		Attempts: e.Attempts, CreatedAt: e.CreatedAt, StartedAt: e.StartedAt, EndedAt: e.EndedAt}
}

func scopeOf(wf store.Workflow) store.Scope { return store.Scope{Workflow: wf.Name, Tag: wf.Tag} }
