package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
)

// The vocabulary of proposals, in the order error messages and tool
// schemas list it.
var (
	ProposalTypes = []string{"election", "decision", "approval", "assignment"}
	Resolutions   = []string{"plurality", "majority", "unanimous"}
	TieBreakers   = []string{"first", "creator-decides"}
)

// Limits on NewProposal, exported so that tool descriptions can state them.
const (
	// DefaultProposalExpiry keeps a forgotten proposal from blocking a
	// workflow's completion for long.
	DefaultProposalExpiry = time.Hour
	// MaxProposalExpiry bounds how long a proposal can hold a workflow open.
	MaxProposalExpiry = 30 * 24 * time.Hour
	// MaxProposalOptions keeps the ballot readable in a channel line.
	MaxProposalOptions = 20
)

// Proposal is a question put to the agents of one workflow:tag, with the
// votes cast so far; it is how a team decides without a human.
type Proposal struct {
	// ID is "prop-N", unique across all scopes and never reused.
	ID            string
	Workflow, Tag string
	Creator       string
	Type          string
	Title         string
	Options       []string
	Resolution    string
	TieBreaker    string
	// Quorum is how many votes must be cast before the rule is applied.
	Quorum  int
	Binding bool
	// State is active, resolved, expired or cancelled.
	State  string
	Winner string
	// ResolvedBy says what closed a proposal with a result: "votes" or
	// "timeout"; "" while active and after a cancel.
	ResolvedBy string
	// ExpiresAt is the deadline; ResolvedAt is when the proposal left
	// active, by any route. Both are zero when unset.
	CreatedAt, ExpiresAt, ResolvedAt time.Time
	// Votes holds one vote per voter, in the order they first voted.
	Votes []Vote
}

// Vote is one agent's current choice on a proposal; voting again replaces
// choice and reason but keeps CreatedAt, the time of the first vote.
type Vote struct {
	Voter, Choice, Reason string
	CreatedAt             time.Time
}

// NewProposal is what an agent asks for; zero fields take the defaults
// documented on each.
type NewProposal struct {
	Workflow, Tag, Creator, Type, Title string
	// Options default to approve/reject for an approval; any other type
	// needs at least two.
	Options []string
	// Resolution defaults to plurality, TieBreaker to first.
	Resolution, TieBreaker string
	// Quorum 0 means every member of the workflow:tag at creation.
	Quorum  int
	Binding bool
	// ExpiresIn 0 means DefaultProposalExpiry.
	ExpiresIn time.Duration
}

// ProposalEventKind says what happened to a proposal.
type ProposalEventKind string

// What a proposal's news tells.
const (
	ProposalOpened    ProposalEventKind = "opened"
	ProposalVoted     ProposalEventKind = "voted"
	ProposalResolved  ProposalEventKind = "resolved"
	ProposalCancelled ProposalEventKind = "cancelled"
	ProposalExpired   ProposalEventKind = "expired"
)

// ProposalNews is what a write did to a proposal, as facts for the team to
// tell: the store decides, in the write, who is told; the caller's Lines
// words the channel's line, which the store writes in the same write.
type ProposalNews struct {
	Kind ProposalEventKind
	// Proposal is the proposal as the event left it (for a vote: before
	// the vote resolved it, if it did).
	Proposal Proposal
	// By is the creator who opened or cancelled it, or the voter.
	By string
	// Choice is a vote's choice, as the option is spelled.
	Choice string
	// WinnerVotes is how many votes the winner (Proposal.Winner) had.
	WinnerVotes int
	// Tell are the members to be told, into their inboxes: the others when
	// it opens, the creator and voters when it ends (not the creator who
	// cancels it). A vote tells nobody in particular.
	Tell []string
}

// CreateProposal opens a proposal and tells the other members, whose inbox
// rows come with the returned channel line (say words it).
func (db *DB) CreateProposal(ctx context.Context, np NewProposal, say Lines) (Proposal, []Message, error) {
	p, expiresIn, err := checkNewProposal(np)
	if err != nil {
		return Proposal{}, nil, err
	}
	s := Scope{Workflow: p.Workflow, Tag: p.Tag}
	msgs, err := db.writeTelling(ctx, say, func(conn querier, now int64) ([]ProposalNews, error) {
		team, err := memberNames(conn, s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(team, p.Creator) {
			return nil, notMember(p.Creator, s)
		}
		if p.Quorum > len(team) {
			return nil, contract.Errorf(contract.CodeInvalid, "quorum %d is more than the %d members of %s", p.Quorum, len(team), s)
		}
		if p.Quorum == 0 {
			p.Quorum = len(team)
		}
		n, err := count(conn, `INSERT INTO counters (name, value) VALUES ('proposal', 1)
			ON CONFLICT (name) DO UPDATE SET value = counters.value + 1 RETURNING value`)
		if err != nil {
			return nil, err
		}
		p.ID = fmt.Sprintf("prop-%d", n)
		options, err := json.Marshal(p.Options)
		if err != nil {
			return nil, err
		}
		err = conn.execute(`INSERT INTO proposals (id, workflow, tag, creator, type, title,
			options_json, resolution, tie_breaker, quorum, binding, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			&execOptions{Args: []any{p.ID, p.Workflow, p.Tag, p.Creator, p.Type, p.Title,
				string(options), p.Resolution, p.TieBreaker, p.Quorum, p.Binding, now, now + expiresIn.Milliseconds()}})
		if err != nil {
			return nil, err
		}
		if p, err = getProposal(conn, s, p.ID); err != nil {
			return nil, err
		}
		others := slices.DeleteFunc(team, func(m string) bool { return m == p.Creator })
		return []ProposalNews{{Kind: ProposalOpened, Proposal: p, By: p.Creator, Tell: others}}, nil
	})
	if err != nil {
		return Proposal{}, nil, err
	}
	return p, msgs, nil
}

// checkNewProposal applies the defaults and every rule that needs no
// database, so that bad requests fail before taking the write lock.
func checkNewProposal(np NewProposal) (Proposal, time.Duration, error) {
	p := Proposal{
		Workflow: np.Workflow, Tag: np.Tag, Creator: np.Creator, Type: np.Type,
		Title: strings.TrimSpace(np.Title), Resolution: np.Resolution, TieBreaker: np.TieBreaker,
		Quorum: np.Quorum, Binding: np.Binding, State: "active",
	}
	if p.Resolution == "" {
		p.Resolution = "plurality"
	}
	if p.TieBreaker == "" {
		p.TieBreaker = "first"
	}
	expiresIn := cmp.Or(np.ExpiresIn, DefaultProposalExpiry)
	switch {
	case p.Workflow == "" || p.Tag == "":
		return p, 0, contract.Errorf(contract.CodeInvalid, "a proposal needs a workflow and tag")
	case !slices.Contains(ProposalTypes, p.Type):
		return p, 0, contract.Errorf(contract.CodeInvalid, "unknown proposal type %q: use %s", p.Type, listOr(ProposalTypes))
	case !slices.Contains(Resolutions, p.Resolution):
		return p, 0, contract.Errorf(contract.CodeInvalid, "unknown resolution %q: use %s", p.Resolution, listOr(Resolutions))
	case !slices.Contains(TieBreakers, p.TieBreaker):
		return p, 0, contract.Errorf(contract.CodeInvalid, "unknown tie breaker %q: use %s", p.TieBreaker, listOr(TieBreakers))
	case p.Title == "":
		return p, 0, contract.Errorf(contract.CodeInvalid, "a proposal needs a title")
	case p.Quorum < 0:
		return p, 0, contract.Errorf(contract.CodeInvalid, "quorum %d is negative; use 0 for every member", p.Quorum)
	case expiresIn < 0 || expiresIn > MaxProposalExpiry:
		return p, 0, contract.Errorf(contract.CodeInvalid, "expiry %s is out of range: use more than 0 and at most %s", expiresIn, MaxProposalExpiry)
	}
	for _, o := range np.Options {
		o = strings.TrimSpace(o)
		if o == "" {
			return p, 0, contract.Errorf(contract.CodeInvalid, "an option is empty")
		}
		if matchOption(p.Options, o) != "" {
			return p, 0, contract.Errorf(contract.CodeInvalid, "option %q is listed twice", o)
		}
		p.Options = append(p.Options, o)
	}
	if len(p.Options) == 0 && p.Type == "approval" {
		p.Options = []string{"approve", "reject"}
	}
	if len(p.Options) < 2 || len(p.Options) > MaxProposalOptions {
		return p, 0, contract.Errorf(contract.CodeInvalid, "a %s proposal needs 2 to %d distinct options, got %d", p.Type, MaxProposalOptions, len(p.Options))
	}
	return p, expiresIn, nil
}

// CastVote records voter's choice (replacing an earlier vote) and resolves
// the proposal when the votes satisfy its rule. The messages are the vote
// line and, if it resolved, the result line (say words them). A proposal
// found overdue is expired and committed first; the error then comes with
// its expiry line.
func (db *DB) CastVote(ctx context.Context, s Scope, id, voter, choice, reason string, say Lines) (Proposal, []Message, error) {
	var (
		p       Proposal
		refused error
	)
	msgs, err := db.writeTelling(ctx, say, func(conn querier, now int64) (news []ProposalNews, err error) {
		refused = nil
		if p, news, err = liveProposal(conn, s, id, now); err != nil {
			return nil, err
		}
		if p.State != "active" {
			refused = contract.Errorf(contract.CodeConflict, "proposal %s is %s; create a new one", id, p.State)
			return news, nil
		}
		team, err := memberNames(conn, s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(team, voter) {
			return nil, notMember(voter, s)
		}
		canonical := matchOption(p.Options, strings.TrimSpace(choice))
		if canonical == "" {
			return nil, contract.Errorf(contract.CodeInvalid, "%q is not an option of %s: choose %s", choice, id, listOr(p.Options))
		}
		err = conn.execute(`INSERT INTO votes (proposal_id, voter, choice, reason, created_at)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (proposal_id, voter) DO UPDATE SET choice = excluded.choice, reason = excluded.reason`,
			&execOptions{Args: []any{id, voter, canonical, reason, now}})
		if err != nil {
			return nil, err
		}
		if p, err = getProposal(conn, s, id); err != nil {
			return nil, err
		}
		news = append(news, ProposalNews{Kind: ProposalVoted, Proposal: p, By: voter, Choice: canonical})
		if len(p.Votes) < p.Quorum {
			return news, nil
		}
		winner, n := outcome(p)
		if winner == "" {
			return news, nil
		}
		if err := closeProposal(conn, &p, "resolved", "votes", winner, now); err != nil {
			return nil, err
		}
		return append(news, ProposalNews{Kind: ProposalResolved, Proposal: p, WinnerVotes: n, Tell: p.participants()}), nil
	})
	if err != nil {
		return Proposal{}, nil, err
	}
	return p, msgs, refused
}

// GetProposal returns one proposal of s with its votes, expiring it first
// if its deadline has passed, so a reader never sees an overdue "active";
// the expiry's line (say words it) is written with the expiry, and not
// announced: nobody is woken by a read.
func (db *DB) GetProposal(ctx context.Context, s Scope, id string, say Lines) (Proposal, error) {
	var p Proposal
	err := db.read(ctx, func(conn querier) (err error) {
		p, err = getProposal(conn, s, id)
		return err
	})
	if err != nil || !db.overdue(p) {
		return p, err
	}
	_, err = db.writeTelling(ctx, say, func(conn querier, now int64) (news []ProposalNews, err error) {
		p, news, err = liveProposal(conn, s, id, now)
		return news, err
	})
	return p, err
}

// ListProposals returns the proposals of s, newest first, expiring overdue
// ones first like GetProposal.
func (db *DB) ListProposals(ctx context.Context, s Scope, activeOnly bool, say Lines) ([]Proposal, error) {
	var ps []Proposal
	err := db.read(ctx, func(conn querier) (err error) {
		ps, err = listProposals(conn, s, activeOnly)
		return err
	})
	if err != nil || !slices.ContainsFunc(ps, db.overdue) {
		return ps, err
	}
	_, err = db.writeTelling(ctx, say, func(conn querier, now int64) (news []ProposalNews, err error) {
		if _, news, err = expireDue(conn, s, now); err != nil {
			return nil, err
		}
		ps, err = listProposals(conn, s, activeOnly)
		return news, err
	})
	return ps, err
}

// CancelProposal withdraws an active proposal; only its creator may, so
// that nobody can dodge an outcome they dislike. The message (say words
// it) tells the voters, whose votes no longer count.
func (db *DB) CancelProposal(ctx context.Context, s Scope, id, by string, say Lines) (Proposal, []Message, error) {
	var (
		p       Proposal
		refused error
	)
	msgs, err := db.writeTelling(ctx, say, func(conn querier, now int64) (news []ProposalNews, err error) {
		refused = nil
		if p, news, err = liveProposal(conn, s, id, now); err != nil {
			return nil, err
		}
		if p.State != "active" {
			refused = contract.Errorf(contract.CodeConflict, "proposal %s is %s; only an active proposal can be cancelled", id, p.State)
			return news, nil
		}
		if by != p.Creator {
			return nil, contract.Errorf(contract.CodeInvalid, "only %s, who created %s, can cancel it", p.Creator, id)
		}
		if err := closeProposal(conn, &p, "cancelled", "", "", now); err != nil {
			return nil, err
		}
		voters := slices.DeleteFunc(p.participants(), func(v string) bool { return v == p.Creator })
		return append(news, ProposalNews{Kind: ProposalCancelled, Proposal: p, By: by, Tell: voters}), nil
	})
	if err != nil {
		return Proposal{}, nil, err
	}
	return p, msgs, refused
}

// ExpireProposals closes every overdue active proposal of every scope,
// with their lines (say words them). The daemon calls it when NextExpiry
// comes due, so that voters hear of the outcome without anyone reading
// the proposal.
func (db *DB) ExpireProposals(ctx context.Context, say Lines) ([]Proposal, []Message, error) {
	var ps []Proposal
	msgs, err := db.writeTelling(ctx, say, func(conn querier, now int64) (news []ProposalNews, err error) {
		ps, news, err = expireDue(conn, Scope{}, now)
		return news, err
	})
	if err != nil {
		return nil, nil, err
	}
	return ps, msgs, nil
}

// writeTelling runs change in one write and appends, in the same write,
// the channel lines say words for the news change returns, so the change
// and its lines commit together or not at all.
func (db *DB) writeTelling(ctx context.Context, say Lines, change func(conn querier, now int64) ([]ProposalNews, error)) ([]Message, error) {
	var msgs []Message
	err := db.write(ctx, func(conn querier) error {
		now := db.nowMs()
		news, err := change(conn, now)
		if err != nil {
			return err
		}
		msgs, err = appendProposalLines(conn, say, now, news)
		return err
	})
	if err != nil {
		return nil, err
	}
	return msgs, nil
}

// NextExpiry returns the earliest deadline among active proposals, so the
// daemon can sleep until then instead of polling; ok is false when none is
// active. The deadline may already have passed.
func (db *DB) NextExpiry(ctx context.Context) (t time.Time, ok bool, err error) {
	err = db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT expires_at FROM proposals WHERE state = 'active'
			ORDER BY expires_at LIMIT 1`, &execOptions{ResultFunc: func(s row) error {
			t, ok = fromMs(s.ColumnInt64(0)), true
			return nil
		}})
	})
	return t, ok, err
}

// ActiveProposalCount counts the proposals of s still open to votes (not
// yet overdue), because a workflow run is not finished while one is.
func (db *DB) ActiveProposalCount(ctx context.Context, s Scope) (int, error) {
	n := 0
	err := db.read(ctx, func(conn querier) (err error) {
		n, err = count(conn, `SELECT count(*) FROM proposals
			WHERE workflow = ? AND tag = ? AND state = 'active' AND expires_at > ?`, s.Workflow, s.Tag, db.nowMs())
		return err
	})
	return n, err
}

func (db *DB) overdue(p Proposal) bool {
	return p.State == "active" && p.ExpiresAt.UnixMilli() <= db.nowMs()
}

const proposalColumns = `id, workflow, tag, creator, type, title, options_json, resolution, tie_breaker,
	quorum, binding, state, winner, resolved_by, created_at, expires_at, resolved_at`

func scanProposal(s row) (Proposal, error) {
	p := Proposal{
		ID: s.ColumnText(0), Workflow: s.ColumnText(1), Tag: s.ColumnText(2), Creator: s.ColumnText(3),
		Type: s.ColumnText(4), Title: s.ColumnText(5), Resolution: s.ColumnText(7), TieBreaker: s.ColumnText(8),
		Quorum: s.ColumnInt(9), Binding: s.ColumnBool(10), State: s.ColumnText(11), Winner: s.ColumnText(12),
		ResolvedBy: s.ColumnText(13), CreatedAt: fromMs(s.ColumnInt64(14)),
		ExpiresAt: msOrZero(s.ColumnInt64(15)), ResolvedAt: msOrZero(s.ColumnInt64(16)),
	}
	if err := json.Unmarshal([]byte(s.ColumnText(6)), &p.Options); err != nil {
		return p, fmt.Errorf("proposal %s: options: %w", p.ID, err)
	}
	return p, nil
}

// msOrZero reads a timestamp column where 0 means "not yet".
func msOrZero(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return fromMs(ms)
}

func getProposal(conn querier, s Scope, id string) (Proposal, error) {
	var p Proposal
	found := false
	err := conn.execute(`SELECT `+proposalColumns+` FROM proposals WHERE id = ? AND workflow = ? AND tag = ?`,
		&execOptions{Args: []any{id, s.Workflow, s.Tag}, ResultFunc: func(st row) (err error) {
			p, err = scanProposal(st)
			found = true
			return err
		}})
	if err == nil && !found {
		err = contract.Errorf(contract.CodeNotFound, "proposal %s not found in %s", id, s)
	}
	if err != nil {
		return Proposal{}, err
	}
	return p, loadVotes(conn, &p)
}

func listProposals(conn querier, s Scope, activeOnly bool) ([]Proposal, error) {
	var ps []Proposal
	err := conn.execute(`SELECT `+proposalColumns+` FROM proposals
		WHERE workflow = ? AND tag = ? AND (NOT ? OR state = 'active')
		ORDER BY CAST(substr(id, 6) AS INTEGER) DESC`,
		&execOptions{Args: []any{s.Workflow, s.Tag, activeOnly}, ResultFunc: func(st row) error {
			p, err := scanProposal(st)
			ps = append(ps, p)
			return err
		}})
	for i := range ps {
		if err == nil {
			err = loadVotes(conn, &ps[i])
		}
	}
	return ps, err
}

func loadVotes(conn querier, p *Proposal) error {
	p.Votes = nil
	return conn.execute(`SELECT voter, choice, reason, created_at FROM votes
		WHERE proposal_id = ? ORDER BY created_at, rowid`,
		&execOptions{Args: []any{p.ID}, ResultFunc: func(s row) error {
			p.Votes = append(p.Votes, Vote{s.ColumnText(0), s.ColumnText(1), s.ColumnText(2), fromMs(s.ColumnInt64(3))})
			return nil
		}})
}

// liveProposal loads a proposal inside a write, expiring it first if its
// deadline has passed; the news is its expiry, if it expired.
func liveProposal(conn querier, s Scope, id string, now int64) (Proposal, []ProposalNews, error) {
	p, err := getProposal(conn, s, id)
	if err != nil || p.State != "active" || p.ExpiresAt.UnixMilli() > now {
		return p, nil, err
	}
	n, err := expireProposal(conn, &p, now)
	return p, []ProposalNews{n}, err
}

// expireDue expires the overdue active proposals of s, or of every scope
// when s is zero, oldest deadline first.
func expireDue(conn querier, s Scope, now int64) ([]Proposal, []ProposalNews, error) {
	type due struct {
		id string
		s  Scope
	}
	var dues []due
	err := conn.execute(`SELECT id, workflow, tag FROM proposals
		WHERE state = 'active' AND expires_at <= ?1 AND (?2 = '' OR (workflow = ?2 AND tag = ?3))
		ORDER BY expires_at, CAST(substr(id, 6) AS INTEGER)`,
		&execOptions{Args: []any{now, s.Workflow, s.Tag}, ResultFunc: func(st row) error {
			dues = append(dues, due{st.ColumnText(0), Scope{Workflow: st.ColumnText(1), Tag: st.ColumnText(2)}})
			return nil
		}})
	if err != nil {
		return nil, nil, err
	}
	var (
		ps   []Proposal
		news []ProposalNews
	)
	for _, d := range dues {
		p, n, err := liveProposal(conn, d.s, d.id, now)
		if err != nil {
			return nil, nil, err
		}
		ps, news = append(ps, p), append(news, n...)
	}
	return ps, news, nil
}

// expireProposal closes an overdue proposal with the result of the votes
// cast so far, since a deadline must not throw away what was agreed.
func expireProposal(conn querier, p *Proposal, now int64) (ProposalNews, error) {
	winner, n := outcome(*p)
	if err := closeProposal(conn, p, "expired", "timeout", winner, now); err != nil {
		return ProposalNews{}, err
	}
	return ProposalNews{Kind: ProposalExpired, Proposal: *p, WinnerVotes: n, Tell: p.participants()}, nil
}

// closeProposal ends p's active life; a binding result also becomes the
// workflow's decision, whether votes or the deadline produced it.
func closeProposal(conn querier, p *Proposal, state, resolvedBy, winner string, now int64) error {
	err := conn.execute(`UPDATE proposals SET state = ?, resolved_by = ?, winner = ?, resolved_at = ?
		WHERE id = ?`, &execOptions{Args: []any{state, resolvedBy, winner, now, p.ID}})
	if err != nil {
		return err
	}
	p.State, p.ResolvedBy, p.Winner, p.ResolvedAt = state, resolvedBy, winner, fromMs(now)
	if !p.Binding || winner == "" {
		return nil
	}
	return conn.execute(`INSERT INTO decisions (proposal_id, workflow, tag, title, winner, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`, &execOptions{Args: []any{p.ID, p.Workflow, p.Tag, p.Title, winner, now}})
}

// outcome applies p's resolution rule to the votes cast, without the
// quorum: the winner and its vote count, or "" when the rule picks nobody.
func outcome(p Proposal) (string, int) {
	tally := map[string]int{}
	for _, v := range p.Votes {
		tally[v.Choice]++
	}
	top, leaders := 0, []string(nil)
	for _, o := range p.Options {
		switch c := tally[o]; {
		case c == 0:
		case c > top:
			top, leaders = c, []string{o}
		case c == top:
			leaders = append(leaders, o)
		}
	}
	var won bool
	switch p.Resolution {
	case "majority":
		won = 2*top > len(p.Votes)
	case "unanimous":
		won = top == len(p.Votes)
	default:
		won = len(leaders) == 1 || p.TieBreaker == "first"
	}
	if top == 0 || !won {
		return "", 0
	}
	return leaders[0], top
}

// participants are the agents who care about the outcome: the creator, then
// the voters.
func (p Proposal) participants() []string {
	names := []string{p.Creator}
	for _, v := range p.Votes {
		names = append(names, v.Voter)
	}
	return dedupe(names)
}

// memberNames lists the members of s by name: who may create proposals and
// vote, create and claim tasks.
func memberNames(conn querier, s Scope) ([]string, error) {
	var names []string
	err := conn.execute(`SELECT name FROM agents WHERE workflow = ? AND tag = ? ORDER BY name`,
		&execOptions{Args: []any{s.Workflow, s.Tag}, ResultFunc: func(st row) error {
			names = append(names, st.ColumnText(0))
			return nil
		}})
	return names, err
}

func notMember(name string, s Scope) error {
	return contract.Errorf(contract.CodeInvalid, "%s is not a member of %s", name, s)
}

// matchOption returns the option equal to choice ignoring case, or "".
func matchOption(options []string, choice string) string {
	for _, o := range options {
		if strings.EqualFold(o, choice) {
			return o
		}
	}
	return ""
}

// listOr joins items as "a, b or c" for error messages.
func listOr(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
