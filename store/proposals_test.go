package store

import (
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/contract"
)

var (
	wfMain = Scope{Workflow: "wf", Tag: "main"}
	propT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

// teamDB opens a store on a clock the test moves, with members in wf:main.
func teamDB(t *testing.T, members ...string) (*DB, *clock) {
	t.Helper()
	clk := &clock{t: propT0}
	db := openAt(t, testPath(t), Options{PoolSize: 4, Now: clk.Now})
	addMembers(t, db, wfMain, members...)
	return db, clk
}

func addMembers(t *testing.T, db *DB, s Scope, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := db.CreateAgent(t.Context(), Agent{Name: n, Workflow: s.Workflow, Tag: s.Tag, Backend: "mock"}); err != nil {
			t.Fatal(err)
		}
	}
}

// ballot is a valid decision by alice in wf:main; tests change what they test.
func ballot(change func(*NewProposal)) NewProposal {
	np := NewProposal{Workflow: "wf", Tag: "main", Creator: "alice", Type: "decision",
		Title: "Pick a DB", Options: []string{"postgres", "sqlite"}}
	if change != nil {
		change(&np)
	}
	return np
}

func propose(t *testing.T, db *DB, np NewProposal) Proposal {
	t.Helper()
	p, _, err := createProposal(db, t.Context(), np)
	if err != nil {
		t.Fatalf("CreateProposal: %v", err)
	}
	return p
}

func vote(t *testing.T, db *DB, id, voter, choice string) Proposal {
	t.Helper()
	p, _, err := castVote(db, t.Context(), wfMain, id, voter, choice, "")
	if err != nil {
		t.Fatalf("%s votes %s on %s: %v", voter, choice, id, err)
	}
	return p
}

func wantPropErr(t *testing.T, err error, code contract.Code, parts ...string) {
	t.Helper()
	if contract.ErrorCode(err) != code {
		t.Errorf("error %v has code %q, want %q", err, contract.ErrorCode(err), code)
	}
	wantErr(t, err, parts...)
}

// propLine is a channel line as its readers see it: text and whose inbox got it.
type propLine struct {
	Content string
	Inbox   []string
}

// linesOf summarises proposal news, a line per event, with who is told:
// the facts the team service words as channel lines (host/team).
func linesOf(news []ProposalNews) []propLine {
	var ls []propLine
	for _, n := range news {
		p := n.Proposal
		line := fmt.Sprintf("%s %s", n.Kind, p.ID)
		if n.By != "" {
			line += " by " + n.By
		}
		switch n.Kind {
		case ProposalVoted:
			line += fmt.Sprintf(": %q (%d/%d votes)", n.Choice, len(p.Votes), p.Quorum)
		case ProposalResolved, ProposalExpired:
			if p.Winner == "" {
				line += ": no winner"
			} else {
				line += fmt.Sprintf(": %q wins (%d of %d votes)", p.Winner, n.WinnerVotes, len(p.Votes))
			}
		}
		inbox := slices.Clone(n.Tell)
		slices.Sort(inbox)
		if len(inbox) == 0 {
			inbox = nil
		}
		ls = append(ls, propLine{line, inbox})
	}
	return ls
}

// systemLines reads the system lines of s and their inbox rows from the
// tables, so tests see what was committed rather than what was returned.
func systemLines(t *testing.T, db *DB, s Scope) []propLine {
	t.Helper()
	var ls []propLine
	err := db.read(t.Context(), func(conn querier) error {
		var seqs []int64
		err := conn.execute(`SELECT seq, content FROM messages
			WHERE workflow = ? AND tag = ? AND sender = 'system' AND kind = 'system' ORDER BY seq`,
			&execOptions{Args: []any{s.Workflow, s.Tag}, ResultFunc: func(st row) error {
				seqs = append(seqs, st.ColumnInt64(0))
				ls = append(ls, propLine{Content: st.ColumnText(1)})
				return nil
			}})
		for i, seq := range seqs {
			if err != nil {
				break
			}
			err = conn.execute(`SELECT agent FROM message_recipients WHERE seq = ? ORDER BY agent`,
				&execOptions{Args: []any{seq}, ResultFunc: func(st row) error {
					ls[i].Inbox = append(ls[i].Inbox, st.ColumnText(0))
					return nil
				}})
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func TestCreateProposal(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob", "carol")

	p, msgs, err := createProposal(db, t.Context(), ballot(func(np *NewProposal) {
		np.Type, np.Title, np.Options = "approval", "  Ship v1?  ", nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^prop-\d+$`).MatchString(p.ID) {
		t.Errorf("ID %q does not look like prop-N", p.ID)
	}
	want := Proposal{ID: p.ID, Workflow: "wf", Tag: "main", Creator: "alice", Type: "approval",
		Title: "Ship v1?", Options: []string{"approve", "reject"}, Resolution: "plurality", TieBreaker: "first",
		Quorum: 3, State: "active", CreatedAt: propT0, ExpiresAt: propT0.Add(time.Hour)}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("CreateProposal (-want +got):\n%s", diff)
	}
	got, err := db.GetProposal(t.Context(), wfMain, p.ID, &heard{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("GetProposal (-created +got):\n%s", diff)
	}
	wantLines := []propLine{{`opened ` + p.ID + ` by alice`, []string{"bob", "carol"}}}
	if diff := cmp.Diff(wantLines, linesOf(msgs)); diff != "" {
		t.Errorf("news (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantLines, systemLines(t, db, wfMain)); diff != "" {
		t.Errorf("the line the caller's Lines worded, as committed (-want +got):\n%s", diff)
	}

	p = propose(t, db, ballot(func(np *NewProposal) {
		np.Options, np.Resolution, np.TieBreaker = []string{" a ", "b", "c"}, "majority", "creator-decides"
		np.Quorum, np.Binding, np.ExpiresIn = 2, true, 10*time.Minute
	}))
	if diff := cmp.Diff([]string{"a", "b", "c"}, p.Options); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	if p.Resolution != "majority" || p.TieBreaker != "creator-decides" || p.Quorum != 2 || !p.Binding || !p.ExpiresAt.Equal(propT0.Add(10*time.Minute)) {
		t.Errorf("explicit settings not kept: %+v", p)
	}
}

func TestCreateProposalInvalid(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob", "carol")
	addMembers(t, db, Scope{"wf", "other"}, "zed")

	many := make([]string, MaxProposalOptions+1)
	for i := range many {
		many[i] = fmt.Sprint("o", i)
	}
	for name, tc := range map[string]struct {
		change func(*NewProposal)
		parts  []string
	}{
		"no options":          {func(np *NewProposal) { np.Options = nil }, []string{"decision proposal needs 2 to 20", "got 0"}},
		"one option":          {func(np *NewProposal) { np.Options = []string{"x"} }, []string{"got 1"}},
		"approval one option": {func(np *NewProposal) { np.Type, np.Options = "approval", []string{"yes"} }, []string{"got 1"}},
		"too many options":    {func(np *NewProposal) { np.Options = many }, []string{"got 21"}},
		"duplicate option":    {func(np *NewProposal) { np.Options = []string{"Yes", "no", "yes"} }, []string{`option "yes" is listed twice`}},
		"empty option":        {func(np *NewProposal) { np.Options = []string{"a", " "} }, []string{"empty"}},
		"unknown type":        {func(np *NewProposal) { np.Type = "poll" }, []string{`"poll"`, "election, decision, approval or assignment"}},
		"no type":             {func(np *NewProposal) { np.Type = "" }, []string{"unknown proposal type"}},
		"unknown resolution":  {func(np *NewProposal) { np.Resolution = "most" }, []string{`"most"`, "plurality, majority or unanimous"}},
		"unknown tie breaker": {func(np *NewProposal) { np.TieBreaker = "random" }, []string{`"random"`, "first or creator-decides"}},
		"blank title":         {func(np *NewProposal) { np.Title = "  " }, []string{"needs a title"}},
		"negative quorum":     {func(np *NewProposal) { np.Quorum = -1 }, []string{"quorum -1"}},
		"quorum over members": {func(np *NewProposal) { np.Quorum = 4 }, []string{"quorum 4", "3 members of @wf:main"}},
		"creator not member":  {func(np *NewProposal) { np.Creator = "zed" }, []string{"zed is not a member of @wf:main"}},
		"unknown workflow":    {func(np *NewProposal) { np.Workflow = "nope" }, []string{"alice is not a member of @nope:main"}},
		"negative expiry":     {func(np *NewProposal) { np.ExpiresIn = -time.Second }, []string{"expiry -1s"}},
		"expiry over 30 days": {func(np *NewProposal) { np.ExpiresIn = MaxProposalExpiry + time.Second }, []string{"expiry", "out of range"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, msgs, err := createProposal(db, t.Context(), ballot(tc.change))
			wantPropErr(t, err, contract.CodeInvalid, tc.parts...)
			if msgs != nil {
				t.Errorf("messages returned with the error: %v", msgs)
			}
		})
	}
	if n := queryInt(t, db, `SELECT count(*) FROM proposals`) + queryInt(t, db, `SELECT count(*) FROM messages`); n != 0 {
		t.Errorf("failed creates left %d rows", n)
	}
	// A rolled-back create gives its number back; only committed ones count.
	if p := propose(t, db, ballot(nil)); p.ID != "prop-1" {
		t.Errorf("first committed proposal is %s, want prop-1", p.ID)
	}
}

func TestVoteResolution(t *testing.T) {
	t.Parallel()
	type step struct{ voter, choice, state, winner string }
	for name, tc := range map[string]struct {
		members []string
		change  func(*NewProposal)
		steps   []step
	}{
		"plurality a/a/b": {
			change: func(np *NewProposal) { np.Options = []string{"a", "b"} },
			steps:  []step{{"alice", "a", "active", ""}, {"bob", "a", "active", ""}, {"carol", "b", "resolved", "a"}},
		},
		"majority 2 of 3": {
			change: func(np *NewProposal) { np.Options, np.Resolution = []string{"a", "b"}, "majority" },
			steps:  []step{{"alice", "a", "active", ""}, {"bob", "b", "active", ""}, {"carol", "a", "resolved", "a"}},
		},
		"majority split until a vote changes": {
			change: func(np *NewProposal) { np.Options, np.Resolution = []string{"a", "b", "c"}, "majority" },
			steps: []step{{"alice", "a", "active", ""}, {"bob", "b", "active", ""}, {"carol", "c", "active", ""},
				{"carol", "b", "resolved", "b"}},
		},
		"unanimous yes/yes/no": {
			change: func(np *NewProposal) { np.Options, np.Resolution = []string{"yes", "no"}, "unanimous" },
			steps: []step{{"alice", "yes", "active", ""}, {"bob", "yes", "active", ""}, {"carol", "no", "active", ""},
				{"carol", "yes", "resolved", "yes"}},
		},
		"quorum 3 with 2 votes": {
			change: func(np *NewProposal) { np.Quorum = 3 },
			steps:  []step{{"alice", "sqlite", "active", ""}, {"bob", "sqlite", "active", ""}},
		},
		"creator-decides 2:2 tie waits for a changed vote": {
			members: []string{"alice", "bob", "carol", "dave"},
			change:  func(np *NewProposal) { np.Options, np.TieBreaker = []string{"a", "b"}, "creator-decides" },
			steps: []step{{"alice", "a", "active", ""}, {"bob", "a", "active", ""}, {"carol", "b", "active", ""},
				{"dave", "b", "active", ""}, {"bob", "b", "resolved", "b"}},
		},
		"tie goes to the first tied option": {
			change: func(np *NewProposal) { np.Options, np.Quorum = []string{"a", "b", "c"}, 2 },
			steps:  []step{{"alice", "c", "active", ""}, {"bob", "b", "resolved", "b"}},
		},
		"quorum 1": {
			change: func(np *NewProposal) { np.Quorum = 1 },
			steps:  []step{{"bob", "sqlite", "resolved", "sqlite"}},
		},
		"choice matched ignoring case": {
			change: func(np *NewProposal) { np.Options, np.Quorum = []string{"Postgres", "SQLite"}, 1 },
			steps:  []step{{"bob", " sqlite", "resolved", "SQLite"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if tc.members == nil {
				tc.members = []string{"alice", "bob", "carol"}
			}
			db, _ := teamDB(t, tc.members...)
			p := propose(t, db, ballot(tc.change))
			for i, s := range tc.steps {
				p = vote(t, db, p.ID, s.voter, s.choice)
				if p.State != s.state || p.Winner != s.winner {
					t.Fatalf("after vote %d (%s: %s): state %q winner %q, want %q %q", i+1, s.voter, s.choice, p.State, p.Winner, s.state, s.winner)
				}
			}
			wantBy, wantAt := "", time.Time{}
			if p.State == "resolved" {
				wantBy, wantAt = "votes", propT0
			}
			if p.ResolvedBy != wantBy || !p.ResolvedAt.Equal(wantAt) {
				t.Errorf("ResolvedBy %q ResolvedAt %v, want %q %v", p.ResolvedBy, p.ResolvedAt, wantBy, wantAt)
			}
			got, err := db.GetProposal(t.Context(), wfMain, p.ID, &heard{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(p, got); diff != "" {
				t.Errorf("stored proposal differs from returned one (-returned +stored):\n%s", diff)
			}
		})
	}
}

func TestProposalChannelLines(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob", "carol")
	var all []ProposalNews
	p, msgs, err := createProposal(db, t.Context(), ballot(func(np *NewProposal) { np.Quorum = 2 }))
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, msgs...)
	for _, voter := range []string{"bob", "carol"} {
		_, msgs, err := castVote(db, t.Context(), wfMain, p.ID, voter, "Postgres", "")
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, msgs...)
	}
	want := []propLine{
		{`opened prop-1 by alice`, []string{"bob", "carol"}},
		{`voted prop-1 by bob: "postgres" (1/2 votes)`, nil},
		{`voted prop-1 by carol: "postgres" (2/2 votes)`, nil},
		{`resolved prop-1: "postgres" wins (2 of 2 votes)`, []string{"alice", "bob", "carol"}},
	}
	if diff := cmp.Diff(want, linesOf(all)); diff != "" {
		t.Errorf("news (-want +got):\n%s", diff)
	}
}

func TestVoteReplacesEarlierVote(t *testing.T) {
	t.Parallel()
	db, clk := teamDB(t, "alice", "bob", "carol")
	p := propose(t, db, ballot(nil))
	for i, v := range []struct{ voter, choice, reason string }{
		{"alice", "postgres", "it scales"}, {"bob", "sqlite", "one file"}, {"alice", "sqlite", ""},
	} {
		clk.Set(propT0.Add(time.Duration(i) * time.Second))
		var err error
		if p, _, err = castVote(db, t.Context(), wfMain, p.ID, v.voter, v.choice, v.reason); err != nil {
			t.Fatal(err)
		}
	}
	want := []Vote{{"alice", "sqlite", "", propT0}, {"bob", "sqlite", "one file", propT0.Add(time.Second)}}
	if diff := cmp.Diff(want, p.Votes); diff != "" {
		t.Errorf("votes (-want +got):\n%s", diff)
	}
	if p.State != "active" {
		t.Errorf("state %q with 2 votes of quorum 3", p.State)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM votes`); n != 2 {
		t.Errorf("%d vote rows, want 2", n)
	}
}

func TestVoteErrors(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob", "carol")
	other := Scope{"wf", "other"}
	addMembers(t, db, other, "zed")
	active := propose(t, db, ballot(nil))
	resolved := propose(t, db, ballot(func(np *NewProposal) { np.Quorum = 1 }))
	vote(t, db, resolved.ID, "bob", "sqlite")
	votes, lines := queryInt(t, db, `SELECT count(*) FROM votes`), queryInt(t, db, `SELECT count(*) FROM messages`)

	for name, tc := range map[string]struct {
		s                 Scope
		id, voter, choice string
		code              contract.Code
		parts             []string
	}{
		"member of another scope": {wfMain, active.ID, "zed", "sqlite", contract.CodeInvalid, []string{"zed is not a member of @wf:main"}},
		"unknown voter":           {wfMain, active.ID, "nobody", "sqlite", contract.CodeInvalid, []string{"nobody is not a member"}},
		"invalid choice":          {wfMain, active.ID, "bob", "mysql", contract.CodeInvalid, []string{`"mysql" is not an option of prop-1`, "postgres or sqlite"}},
		"unknown proposal":        {wfMain, "prop-99", "bob", "sqlite", contract.CodeNotFound, []string{"proposal prop-99 not found in @wf:main"}},
		"proposal of other scope": {other, active.ID, "zed", "sqlite", contract.CodeNotFound, []string{"proposal prop-1 not found in @wf:other"}},
		"resolved proposal":       {wfMain, resolved.ID, "alice", "sqlite", contract.CodeConflict, []string{"proposal prop-2 is resolved; create a new one"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := castVote(db, t.Context(), tc.s, tc.id, tc.voter, tc.choice, "why")
			wantPropErr(t, err, tc.code, tc.parts...)
		})
	}
	if n := queryInt(t, db, `SELECT count(*) FROM votes`); n != votes {
		t.Errorf("failed votes changed the vote rows from %d to %d", votes, n)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM messages`); n != lines {
		t.Errorf("failed votes changed the channel from %d to %d lines", lines, n)
	}
}

func TestExpireProposals(t *testing.T) {
	t.Parallel()
	db, clk := teamDB(t, "alice", "bob", "carol")
	ctx := t.Context()
	wantNext := func(want time.Time, wantOK bool) {
		t.Helper()
		got, ok, err := db.NextExpiry(ctx)
		if err != nil || ok != wantOK || !got.Equal(want) {
			t.Errorf("NextExpiry = %v, %v, %v; want %v, %v", got, ok, err, want, wantOK)
		}
	}
	wantActive := func(want int) {
		t.Helper()
		if n, err := db.ActiveProposalCount(ctx, wfMain); n != want || err != nil {
			t.Errorf("ActiveProposalCount = %d, %v; want %d", n, err, want)
		}
	}

	wantNext(time.Time{}, false)
	p1 := propose(t, db, ballot(nil))
	p2 := propose(t, db, ballot(func(np *NewProposal) { np.ExpiresIn = 2 * time.Hour }))
	vote(t, db, p1.ID, "bob", "sqlite")
	wantNext(propT0.Add(time.Hour), true)
	wantActive(2)

	clk.Set(propT0.Add(time.Hour - time.Millisecond))
	if ps, msgs, err := expireProposals(db, ctx); len(ps)+len(msgs) != 0 || err != nil {
		t.Errorf("ExpireProposals before the deadline = %v, %v, %v", ps, msgs, err)
	}

	clk.Set(propT0.Add(time.Hour))
	wantActive(1) // an overdue proposal no longer holds the workflow open
	ps, msgs, err := expireProposals(db, ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := p1
	want.State, want.Winner, want.ResolvedBy, want.ResolvedAt = "expired", "sqlite", "timeout", propT0.Add(time.Hour)
	want.Votes = []Vote{{"bob", "sqlite", "", propT0}}
	if diff := cmp.Diff([]Proposal{want}, ps); diff != "" {
		t.Errorf("ExpireProposals (-want +got):\n%s", diff)
	}
	wantLines := []propLine{{`expired prop-1: "sqlite" wins (1 of 1 votes)`, []string{"alice", "bob"}}}
	if diff := cmp.Diff(wantLines, linesOf(msgs)); diff != "" {
		t.Errorf("expiry news (-want +got):\n%s", diff)
	}
	if ps, _, err := expireProposals(db, ctx); err != nil || len(ps) != 0 {
		t.Errorf("a second ExpireProposals expired %v again, %v", ps, err)
	}
	wantNext(propT0.Add(2*time.Hour), true)

	clk.Set(propT0.Add(3 * time.Hour))
	ps, msgs, err = expireProposals(db, ctx)
	if err != nil || len(ps) != 1 || ps[0].ID != p2.ID || ps[0].Winner != "" || ps[0].State != "expired" {
		t.Fatalf("ExpireProposals = %+v, %v; want %s expired without winner", ps, err, p2.ID)
	}
	if diff := cmp.Diff([]propLine{{"expired prop-2: no winner", []string{"alice"}}}, linesOf(msgs)); diff != "" {
		t.Errorf("expiry lines (-want +got):\n%s", diff)
	}
	wantNext(time.Time{}, false)
	wantActive(0)
}

func TestExpireProposalsWinner(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		resolution, tieBreaker string
		votes                  []string // cast by alice, bob: below the quorum of 3
		want                   string
	}{
		"no votes":                       {"plurality", "first", nil, ""},
		"plurality leader":               {"plurality", "first", []string{"b", "b"}, "b"},
		"plurality tie, first":           {"plurality", "first", []string{"c", "b"}, "b"},
		"plurality tie, creator-decides": {"plurality", "creator-decides", []string{"c", "b"}, ""},
		"majority holds":                 {"majority", "first", []string{"a", "a"}, "a"},
		"majority fails":                 {"majority", "first", []string{"a", "b"}, ""},
		"unanimous holds":                {"unanimous", "first", []string{"c", "c"}, "c"},
		"unanimous fails":                {"unanimous", "first", []string{"c", "a"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db, clk := teamDB(t, "alice", "bob", "carol")
			p := propose(t, db, ballot(func(np *NewProposal) {
				np.Options, np.Resolution, np.TieBreaker = []string{"a", "b", "c"}, tc.resolution, tc.tieBreaker
			}))
			for i, choice := range tc.votes {
				vote(t, db, p.ID, []string{"alice", "bob"}[i], choice)
			}
			clk.Set(propT0.Add(time.Hour))
			ps, _, err := expireProposals(db, t.Context())
			if err != nil || len(ps) != 1 {
				t.Fatalf("ExpireProposals = %v, %v", ps, err)
			}
			if ps[0].State != "expired" || ps[0].ResolvedBy != "timeout" || ps[0].Winner != tc.want {
				t.Errorf("state %q by %q winner %q, want expired by timeout, winner %q", ps[0].State, ps[0].ResolvedBy, ps[0].Winner, tc.want)
			}
		})
	}
}

func TestProposalLazyExpiry(t *testing.T) {
	t.Parallel()
	db, clk := teamDB(t, "alice", "bob", "carol")
	ctx := t.Context()
	voted := propose(t, db, ballot(nil))
	read := propose(t, db, ballot(nil))
	listed := propose(t, db, ballot(nil))
	cancelled := propose(t, db, ballot(nil))
	clk.Set(propT0.Add(time.Hour - time.Millisecond))
	vote(t, db, voted.ID, "bob", "sqlite") // the last moment still counts
	clk.Set(propT0.Add(time.Hour))

	_, msgs, err := castVote(db, ctx, wfMain, voted.ID, "carol", "sqlite", "")
	wantPropErr(t, err, contract.CodeConflict, "proposal prop-1 is expired; create a new one")
	wantLines := []propLine{{`expired prop-1: "sqlite" wins (1 of 1 votes)`, []string{"alice", "bob"}}}
	if diff := cmp.Diff(wantLines, linesOf(msgs)); diff != "" {
		t.Errorf("news with the refused vote (-want +got):\n%s", diff)
	}
	expiries := len(msgs)
	p, news, err := readProposal(db, ctx, wfMain, read.ID)
	if err != nil || p.State != "expired" || p.ResolvedBy != "timeout" {
		t.Errorf("GetProposal of an overdue proposal = %+v, %v; want it expired", p, err)
	}
	expiries += len(news)
	ps, news, err := readProposals(db, ctx, wfMain, true)
	if err != nil || len(ps) != 0 {
		t.Errorf("ListProposals(active) after the deadline = %+v, %v; want none", ps, err)
	}
	expiries += len(news)
	_, news, err = cancelProposal(db, ctx, wfMain, cancelled.ID, "alice")
	wantPropErr(t, err, contract.CodeConflict, "proposal prop-4 is expired")
	expiries += len(news)

	// Every lazy expiry was committed, with one propLine each, and none is redone.
	for _, id := range []string{voted.ID, read.ID, listed.ID, cancelled.ID} {
		if p, err := db.GetProposal(ctx, wfMain, id, &heard{}); err != nil || p.State != "expired" {
			t.Errorf("%s = %+v, %v; want expired", id, p, err)
		}
	}
	if ps, _, err := expireProposals(db, ctx); err != nil || len(ps) != 0 {
		t.Errorf("ExpireProposals found %d more, %v", len(ps), err)
	}
	if expiries != 4 {
		t.Errorf("%d expiries told, want 4", expiries)
	}
	// A read writes its expiry's line too (the caller does not announce it).
	if n := queryInt(t, db, `SELECT count(*) FROM messages WHERE content LIKE 'expired %'`); n != 4 {
		t.Errorf("%d expiry lines, want 4", n)
	}
}

func TestCancelProposal(t *testing.T) {
	t.Parallel()
	db, clk := teamDB(t, "alice", "bob", "carol")
	ctx := t.Context()
	p := propose(t, db, ballot(nil))
	vote(t, db, p.ID, "bob", "sqlite")
	vote(t, db, p.ID, "alice", "sqlite")

	_, _, err := cancelProposal(db, ctx, wfMain, p.ID, "bob")
	wantPropErr(t, err, contract.CodeInvalid, "only alice, who created prop-1, can cancel it")
	_, _, err = cancelProposal(db, ctx, Scope{"wf", "other"}, p.ID, "alice")
	wantPropErr(t, err, contract.CodeNotFound, "not found in @wf:other")

	clk.Set(propT0.Add(time.Minute))
	got, msgs, err := cancelProposal(db, ctx, wfMain, p.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "cancelled" || got.ResolvedBy != "" || got.Winner != "" || !got.ResolvedAt.Equal(propT0.Add(time.Minute)) {
		t.Errorf("cancelled proposal = %+v", got)
	}
	if diff := cmp.Diff([]propLine{{`cancelled prop-1 by alice`, []string{"bob"}}}, linesOf(msgs)); diff != "" {
		t.Errorf("cancel lines (-want +got):\n%s", diff)
	}

	_, _, err = cancelProposal(db, ctx, wfMain, p.ID, "alice")
	wantPropErr(t, err, contract.CodeConflict, "proposal prop-1 is cancelled")
	_, _, err = castVote(db, ctx, wfMain, p.ID, "carol", "sqlite", "")
	wantPropErr(t, err, contract.CodeConflict, "proposal prop-1 is cancelled; create a new one")
	if _, ok, err := db.NextExpiry(ctx); err != nil {
		t.Errorf("NextExpiry: %v", err)
	} else if ok {
		t.Error("NextExpiry still waits for a cancelled proposal")
	}
}

func TestProposalBindingDecisions(t *testing.T) {
	t.Parallel()
	db, clk := teamDB(t, "alice", "bob", "carol")
	binding := func(np *NewProposal) { np.Binding, np.Quorum = true, 1 }
	byVotes := propose(t, db, ballot(binding))
	vote(t, db, byVotes.ID, "bob", "sqlite")
	free := propose(t, db, ballot(func(np *NewProposal) { np.Quorum = 1 }))
	vote(t, db, free.ID, "bob", "sqlite")
	if _, _, err := cancelProposal(db, t.Context(), wfMain, propose(t, db, ballot(binding)).ID, "alice"); err != nil {
		t.Fatal(err)
	}
	byTimeout := propose(t, db, ballot(func(np *NewProposal) { np.Binding, np.Resolution = true, "majority" }))
	vote(t, db, byTimeout.ID, "carol", "postgres")
	clk.Set(propT0.Add(time.Hour))
	if _, _, err := expireProposals(db, t.Context()); err != nil {
		t.Fatal(err)
	}

	type decision struct{ ID, Workflow, Tag, Title, Winner string }
	var got []decision
	err := db.read(t.Context(), func(conn querier) error {
		return conn.execute(`SELECT proposal_id, workflow, tag, title, winner FROM decisions ORDER BY created_at, proposal_id`,
			&execOptions{ResultFunc: func(s row) error {
				got = append(got, decision{s.ColumnText(0), s.ColumnText(1), s.ColumnText(2), s.ColumnText(3), s.ColumnText(4)})
				return nil
			}})
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []decision{
		{byVotes.ID, "wf", "main", "Pick a DB", "sqlite"},
		{byTimeout.ID, "wf", "main", "Pick a DB", "postgres"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

func TestProposalCounterSurvivesReopen(t *testing.T) {
	t.Parallel()
	path := testPath(t)
	db := openAt(t, path, Options{})
	addMembers(t, db, wfMain, "alice", "bob")
	for range 2 {
		p := propose(t, db, ballot(func(np *NewProposal) { np.Quorum = 1 }))
		if _, _, err := castVote(db, t.Context(), wfMain, p.ID, "bob", "sqlite", "one file"); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openAt(t, path, Options{})
	p, err := db.GetProposal(t.Context(), wfMain, "prop-2", &heard{})
	if err != nil || p.State != "resolved" || len(p.Votes) != 1 || p.Votes[0].Reason != "one file" {
		t.Errorf("prop-2 after re-open = %+v, %v; want resolved with bob's reason", p, err)
	}
	if p := propose(t, db, ballot(nil)); p.ID != "prop-3" {
		t.Errorf("first proposal after re-open is %s, want prop-3", p.ID)
	}
	// Deleting the workflow deletes its proposals, but not their numbers.
	if err := db.DeleteWorkflow(t.Context(), "wf", "main"); err != nil {
		t.Fatal(err)
	}
	addMembers(t, db, wfMain, "alice", "bob")
	if p := propose(t, db, ballot(nil)); p.ID != "prop-4" {
		t.Errorf("proposal after deleting the workflow is %s, want prop-4", p.ID)
	}
}

func TestConcurrentProposalsGetDistinctIDs(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob")
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, _, err := createProposal(db, t.Context(), ballot(nil))
			if err != nil {
				t.Error(err)
			}
			ids[i] = p.ID
		})
	}
	wg.Wait()
	slices.Sort(ids)
	if ids = slices.Compact(ids); len(ids) != n {
		t.Errorf("ids %v are not %d distinct ones", ids, n)
	}
}

func TestListProposalsAndScopes(t *testing.T) {
	t.Parallel()
	db, _ := teamDB(t, "alice", "bob")
	ctx := t.Context()
	wfB := Scope{"wf", "b"}
	addMembers(t, db, wfB, "alice")
	p1 := propose(t, db, ballot(nil))
	p2 := propose(t, db, ballot(func(np *NewProposal) { np.Quorum = 1 }))
	vote(t, db, p2.ID, "bob", "sqlite")
	p3 := propose(t, db, ballot(nil))
	inB := propose(t, db, ballot(func(np *NewProposal) { np.Tag = "b" }))

	ids := func(s Scope, activeOnly bool) []string {
		ps, err := db.ListProposals(ctx, s, activeOnly, &heard{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range ps {
			ids = append(ids, p.ID)
		}
		return ids
	}
	for name, tc := range map[string]struct {
		s          Scope
		activeOnly bool
		want       []string
	}{
		"all, newest first": {wfMain, false, []string{p3.ID, p2.ID, p1.ID}},
		"active only":       {wfMain, true, []string{p3.ID, p1.ID}},
		"other scope":       {wfB, false, []string{inB.ID}},
		"unknown scope":     {Scope{"nope", "main"}, false, nil},
	} {
		if diff := cmp.Diff(tc.want, ids(tc.s, tc.activeOnly)); diff != "" {
			t.Errorf("ListProposals %s (-want +got):\n%s", name, diff)
		}
	}
	for s, want := range map[Scope]int{wfMain: 2, wfB: 1, {"nope", "main"}: 0} {
		if n, err := db.ActiveProposalCount(ctx, s); n != want || err != nil {
			t.Errorf("ActiveProposalCount(%s) = %d, %v; want %d", s, n, err, want)
		}
	}
	_, err := db.GetProposal(ctx, wfB, p1.ID, &heard{})
	wantPropErr(t, err, contract.CodeNotFound, "proposal prop-1 not found in @wf:b")
	_, err = db.GetProposal(ctx, wfMain, inB.ID, &heard{})
	wantPropErr(t, err, contract.CodeNotFound, "not found in @wf:main")
}
