package team

import (
	"context"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// CreateProposal opens a proposal; its channel line wakes the other members.
func (s *Service) CreateProposal(ctx context.Context, p store.NewProposal) (store.Proposal, error) {
	out, msgs, err := s.db.CreateProposal(ctx, p, Lines{})
	s.publishAll(msgs)
	select {
	case s.expiry <- struct{}{}:
	default: // a nudge is already pending
	}
	return out, err
}

// Vote records (or replaces) a member's vote and resolves the proposal when
// its rule is met.
func (s *Service) Vote(ctx context.Context, scope store.Scope, id, voter, choice, reason string) (store.Proposal, error) {
	out, msgs, err := s.db.CastVote(ctx, scope, id, voter, choice, reason, Lines{})
	s.publishAll(msgs) // a refused vote may come with an expiry line
	return out, err
}

// CancelProposal closes a proposal; only its creator may.
func (s *Service) CancelProposal(ctx context.Context, scope store.Scope, id, by string) (store.Proposal, error) {
	out, msgs, err := s.db.CancelProposal(ctx, scope, id, by, Lines{})
	s.publishAll(msgs)
	return out, err
}

// Proposal returns one proposal of scope.
func (s *Service) Proposal(ctx context.Context, scope store.Scope, id string) (store.Proposal, error) {
	return s.db.GetProposal(ctx, scope, id, Lines{})
}

// Proposals lists the proposals of scope, newest first.
func (s *Service) Proposals(ctx context.Context, scope store.Scope, activeOnly bool) ([]store.Proposal, error) {
	return s.db.ListProposals(ctx, scope, activeOnly, Lines{})
}

// APIProposal is a proposal as agents (team_proposal_*) and HTTP clients
// (GET /proposals) see it: one conversion, so both always agree. A
// creator-decides tie-break shows as the resolution the creator asked for.
func APIProposal(p store.Proposal) api.Proposal {
	v := api.Proposal{ID: p.ID, Type: p.Type, Title: p.Title, Creator: p.Creator, Options: p.Options,
		Resolution: p.Resolution, Quorum: p.Quorum, Binding: p.Binding, State: p.State, Winner: p.Winner,
		Votes: []api.Vote{}, ExpiresAt: p.ExpiresAt}
	if p.TieBreaker == "creator-decides" {
		v.Resolution = "creator-decides"
	}
	for _, vt := range p.Votes {
		v.Votes = append(v.Votes, api.Vote{Voter: vt.Voter, Choice: vt.Choice, Reason: vt.Reason})
	}
	return v
}

func (s *Service) publishAll(msgs []store.Message) {
	for _, m := range msgs {
		s.Announce(m)
	}
}

// maxExpiryWait bounds a sleep between expiry checks, so a clock jump or a
// proposal created by another process is noticed eventually.
const maxExpiryWait = time.Minute

// RunExpiry closes proposals when they expire, sleeping until the next
// expiry rather than polling, until ctx ends. Creating a proposal signals
// it, so a sooner expiry is seen at once.
func (s *Service) RunExpiry(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.expiry:
		}
		_, msgs, err := s.db.ExpireProposals(ctx, Lines{})
		if err != nil && ctx.Err() == nil {
			s.log.Warn("expire proposals", "error", err)
		}
		s.publishAll(msgs)
		next, ok, err := s.db.NextExpiry(ctx)
		wait := waitUntil(next, ok, err, maxExpiryWait)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// waitUntil is how long a loop that acts at next (when ok, and read
// without err) sleeps: until then, at most limit.
func waitUntil(next time.Time, ok bool, err error, limit time.Duration) time.Duration {
	if err != nil || !ok {
		return limit
	}
	return min(max(time.Until(next), 0), limit)
}
