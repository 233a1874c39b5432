package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// heard is a Lines that keeps the news it words, so the store's tests
// check the facts a change decides; the team's words are tested in
// host/team. Its lines are plain: a proposal's is its summary in linesOf,
// into the inboxes the news names; a task's is "<kind> <id>", into none.
type heard struct {
	tasks     []TaskNews
	proposals []ProposalNews
}

func (h *heard) TaskLines(n TaskNews) []NewMessage {
	h.tasks = append(h.tasks, n)
	return []NewMessage{{Workflow: n.Task.Workflow, Tag: n.Task.Tag, Sender: "system", Kind: KindSystem,
		Content: fmt.Sprintf("%s %s", n.Kind, n.Task.ID), KeepStreak: true}}
}

func (h *heard) ProposalLine(n ProposalNews) NewMessage {
	h.proposals = append(h.proposals, n)
	return NewMessage{Workflow: n.Proposal.Workflow, Tag: n.Proposal.Tag, Sender: "system", Kind: KindSystem,
		Content: linesOf([]ProposalNews{n})[0].Content, Recipients: n.Tell}
}

// The store's calls as its tests make them: each with a fresh heard, and
// the news it heard in place of the lines.

func (h *heard) task(err error) TaskNews {
	if err != nil || len(h.tasks) == 0 {
		return TaskNews{}
	}
	return h.tasks[0]
}

func createTask(db *DB, ctx context.Context, nt NewTask) (Task, TaskNews, error) {
	var h heard
	t, _, err := db.CreateTask(ctx, nt, &h)
	return t, h.task(err), err
}

func completeTask(db *DB, ctx context.Context, a TaskActor, id, result string) (Task, TaskNews, error) {
	var h heard
	t, _, err := db.CompleteTask(ctx, a, id, result, nil, &h)
	return t, h.task(err), err
}

func failTask(db *DB, ctx context.Context, a TaskActor, id, reason string, retry bool) (Task, TaskNews, error) {
	var h heard
	t, _, err := db.FailTask(ctx, a, id, reason, retry, &h)
	return t, h.task(err), err
}

func releaseTask(db *DB, ctx context.Context, a TaskActor, id string) (Task, TaskNews, error) {
	var h heard
	t, _, err := db.ReleaseTask(ctx, a, id, &h)
	return t, h.task(err), err
}

func returnLostTasks(db *DB, ctx context.Context) ([]TaskNews, time.Time, error) {
	var h heard
	_, _, next, err := db.ReturnLostTasks(ctx, &h)
	if err != nil {
		return nil, next, err
	}
	return h.tasks, next, nil
}

// newsOf is the news h heard for a write that returned msgs: none when
// the write failed.
func newsOf(msgs []Message, h *heard) []ProposalNews {
	if msgs == nil {
		return nil
	}
	return h.proposals
}

func createProposal(db *DB, ctx context.Context, np NewProposal) (Proposal, []ProposalNews, error) {
	var h heard
	p, msgs, err := db.CreateProposal(ctx, np, &h)
	return p, newsOf(msgs, &h), err
}

func castVote(db *DB, ctx context.Context, s Scope, id, voter, choice, reason string) (Proposal, []ProposalNews, error) {
	var h heard
	p, msgs, err := db.CastVote(ctx, s, id, voter, choice, reason, &h)
	return p, newsOf(msgs, &h), err
}

func cancelProposal(db *DB, ctx context.Context, s Scope, id, by string) (Proposal, []ProposalNews, error) {
	var h heard
	p, msgs, err := db.CancelProposal(ctx, s, id, by, &h)
	return p, newsOf(msgs, &h), err
}

func expireProposals(db *DB, ctx context.Context) ([]Proposal, []ProposalNews, error) {
	var h heard
	ps, msgs, err := db.ExpireProposals(ctx, &h)
	return ps, newsOf(msgs, &h), err
}

func readProposal(db *DB, ctx context.Context, s Scope, id string) (Proposal, []ProposalNews, error) {
	var h heard
	p, err := db.GetProposal(ctx, s, id, &h)
	if err != nil {
		return p, nil, err
	}
	return p, h.proposals, nil
}

func readProposals(db *DB, ctx context.Context, s Scope, activeOnly bool) ([]Proposal, []ProposalNews, error) {
	var h heard
	ps, err := db.ListProposals(ctx, s, activeOnly, &h)
	if err != nil {
		return ps, nil, err
	}
	return ps, h.proposals, nil
}

// mute words every line without a sender, which the channel refuses: the
// line cannot be written.
type mute struct{ heard }

func (m *mute) TaskLines(n TaskNews) []NewMessage {
	lines := m.heard.TaskLines(n)
	for i := range lines {
		lines[i].Sender = ""
	}
	return lines
}

func (m *mute) ProposalLine(n ProposalNews) NewMessage {
	line := m.heard.ProposalLine(n)
	line.Sender = ""
	return line
}

// A change and its channel lines commit together: when a line cannot be
// written, the change does not happen either, so no change goes untold
// and nobody it wakes is left asleep.
func TestAChangeAndItsLinesCommitTogether(t *testing.T) {
	t.Parallel()
	db, clk := teamDB(t, "alice", "bob")
	ctx := t.Context()
	refused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "message needs a workflow, tag and sender") {
			t.Errorf("%s with a line that cannot be written: err = %v", what, err)
		}
	}
	var m mute
	_, _, err := db.CreateTask(ctx, task("never", nil), &m)
	refused("CreateTask", err)
	if ts, err := db.ListTasks(ctx, wfMain, TaskFilter{}); err != nil || len(ts) != 0 {
		t.Errorf("tasks after a refused create = %+v, %v; want none", ts, err)
	}

	tk := mustCreate(t, db, task("held", nil))
	mustClaim(t, db, actor("bob", ""), tk.ID)
	_, _, err = db.CompleteTask(ctx, actor("bob", ""), tk.ID, "done", nil, &m)
	refused("CompleteTask", err)
	_, _, err = db.FailTask(ctx, actor("bob", ""), tk.ID, "no", true, &m)
	refused("FailTask", err)
	_, _, err = db.ReleaseTask(ctx, actor("bob", ""), tk.ID, &m)
	refused("ReleaseTask", err)
	clk.Set(propT0.Add(TaskLease + time.Second))
	_, _, _, err = db.ReturnLostTasks(ctx, &m)
	refused("ReturnLostTasks", err)
	if got := stateOf(t, db, tk.ID); got.State != contract.TaskClaimed || got.Holder != "bob" || got.Retries != 0 {
		t.Errorf("task after its refused changes = %+v; want still claimed by bob", got)
	}

	p := propose(t, db, ballot(func(np *NewProposal) { np.ExpiresIn = 2 * time.Hour }))
	_, _, err = db.CastVote(ctx, wfMain, p.ID, "bob", "sqlite", "", &m)
	refused("CastVote", err)
	_, _, err = db.CancelProposal(ctx, wfMain, p.ID, "alice", &m)
	refused("CancelProposal", err)
	clk.Set(propT0.Add(3 * time.Hour))
	_, _, err = db.ExpireProposals(ctx, &m)
	refused("ExpireProposals", err)
	_, err = db.GetProposal(ctx, wfMain, p.ID, &m)
	refused("GetProposal of an overdue proposal", err)
	clk.Set(propT0.Add(time.Hour))
	if got, err := db.GetProposal(ctx, wfMain, p.ID, &heard{}); err != nil || got.State != "active" || len(got.Votes) != 0 {
		t.Errorf("proposal after its refused changes = %+v, %v; want active, no votes", got, err)
	}

	// What did commit are the lines of the changes that did.
	want := []propLine{{Content: "created " + tk.ID}, {Content: "opened " + p.ID + " by alice", Inbox: []string{"bob"}}}
	if diff := cmp.Diff(want, systemLines(t, db, wfMain)); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}
