package team

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/store"
)

// The proposals' lines as the team hears them: the store decides what a
// write did and who is told, Lines words it, the store writes the line in
// the same write and the service announces it. The expected lines are
// the ones proposals have always posted.

func ballot(change func(*store.NewProposal)) store.NewProposal {
	np := store.NewProposal{Workflow: board.Workflow, Tag: board.Tag, Creator: "alice", Type: "decision",
		Title: "Pick a DB", Options: []string{"postgres", "sqlite"}}
	if change != nil {
		change(&np)
	}
	return np
}

// Opening tells the other members, votes are counted aloud, and the
// result tells the creator and the voters.
func TestProposalLinesFromOpeningToResult(t *testing.T) {
	t.Parallel()
	s, db, _ := boardTeam(t, "alice", "bob", "carol")
	ctx := t.Context()
	sub := s.Bus.Subscribe(100)
	defer sub.Close()
	p, err := s.CreateProposal(ctx, ballot(func(np *store.NewProposal) { np.Quorum = 2 }))
	if err != nil {
		t.Fatal(err)
	}
	for _, voter := range []string{"bob", "carol"} {
		if _, err := s.Vote(ctx, board, p.ID, voter, "Postgres", ""); err != nil {
			t.Fatal(err)
		}
	}
	want := []boardLine{
		{`@bob @carol: alice opened proposal prop-1 "Pick a DB" (decision, plurality, quorum 2): options postgres, sqlite. Vote with team_vote.`, []string{"bob", "carol"}},
		{`bob voted "postgres" on prop-1 (1/2 votes)`, nil},
		{`carol voted "postgres" on prop-1 (2/2 votes)`, nil},
		{`proposal prop-1 resolved: "postgres" wins (2 of 2 votes) @alice @bob @carol`, []string{"alice", "bob", "carol"}},
	}
	if diff := cmp.Diff(want, systemLines(t, db)); diff != "" {
		t.Errorf("proposal lines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bob", "carol", "alice", "bob", "carol"}, woken(sub)); diff != "" {
		t.Errorf("agents woken (-want +got):\n%s", diff)
	}
}

// A cancel tells the voters but not the creator who cancelled.
func TestProposalLineOfACancel(t *testing.T) {
	t.Parallel()
	s, db, _ := boardTeam(t, "alice", "bob", "carol")
	ctx := t.Context()
	p := mustPropose(t, s)
	if _, err := s.Vote(ctx, board, p.ID, "bob", "sqlite", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CancelProposal(ctx, board, p.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	got := systemLines(t, db)
	if diff := cmp.Diff(boardLine{`alice cancelled proposal prop-1 "Pick a DB"`, []string{"bob"}}, got[len(got)-1]); diff != "" {
		t.Errorf("cancel line (-want +got):\n%s", diff)
	}
}

// A proposal expires with the votes cast so far, or with no winner,
// telling its creator and voters.
func TestProposalLinesOfTheSweep(t *testing.T) {
	t.Parallel()
	s, db, clk := boardTeam(t, "alice", "bob", "carol")
	ctx := t.Context()
	voted := mustPropose(t, s)
	mustPropose(t, s)
	if _, err := s.Vote(ctx, board, voted.ID, "bob", "sqlite", ""); err != nil {
		t.Fatal(err)
	}
	before := len(systemLines(t, db))
	clk.Set(boardT0.Add(time.Hour))
	_, msgs, err := db.ExpireProposals(ctx, Lines{}) // what RunExpiry does when the deadline comes
	if err != nil {
		t.Fatal(err)
	}
	s.publishAll(msgs)
	want := []boardLine{
		{`proposal prop-1 expired: "sqlite" wins (1 of 1 votes)`, []string{"alice", "bob"}},
		{`proposal prop-2 expired with no winner`, []string{"alice"}},
	}
	if diff := cmp.Diff(want, systemLines(t, db)[before:]); diff != "" {
		t.Errorf("expiry lines (-want +got):\n%s", diff)
	}
}

// A proposal found overdue by a late vote, a reader or a listing expires
// there, and the channel hears of it once; only the vote's line wakes
// anyone, as it always has: a read wakes nobody.
func TestProposalLinesOfExpiriesFoundLate(t *testing.T) {
	t.Parallel()
	s, db, clk := boardTeam(t, "alice", "bob", "carol")
	ctx := t.Context()
	read, listed, late := mustPropose(t, s), mustPropose(t, s), mustPropose(t, s)
	for _, p := range []store.Proposal{read, listed, late} {
		if _, err := s.Vote(ctx, board, p.ID, "bob", "sqlite", ""); err != nil {
			t.Fatal(err)
		}
	}
	before := len(systemLines(t, db))
	sub := s.Bus.Subscribe(100)
	defer sub.Close()
	clk.Set(boardT0.Add(time.Hour))
	if _, err := s.Vote(ctx, board, late.ID, "carol", "sqlite", ""); err == nil {
		t.Error("a vote on an overdue proposal was taken")
	}
	if got := woken(sub); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Errorf("the late vote's expiry woke %v, want [alice bob]", got)
	}
	if p, err := s.Proposal(ctx, board, read.ID); err != nil || p.State != "expired" {
		t.Errorf("reading an overdue proposal: %+v, %v", p, err)
	}
	for range 2 { // the second listing finds nothing more to expire
		if _, err := s.Proposals(ctx, board, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := woken(sub); len(got) != 0 {
		t.Errorf("reading expired proposals woke %v, want nobody", got)
	}
	want := []boardLine{
		{`proposal prop-3 expired: "sqlite" wins (1 of 1 votes)`, []string{"alice", "bob"}},
		{`proposal prop-1 expired: "sqlite" wins (1 of 1 votes)`, []string{"alice", "bob"}},
		{`proposal prop-2 expired: "sqlite" wins (1 of 1 votes)`, []string{"alice", "bob"}},
	}
	if diff := cmp.Diff(want, systemLines(t, db)[before:]); diff != "" {
		t.Errorf("expiry lines (-want +got):\n%s", diff)
	}
}

func mustPropose(t *testing.T, s *Service) store.Proposal {
	t.Helper()
	p, err := s.CreateProposal(t.Context(), ballot(nil))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
