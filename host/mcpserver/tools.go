package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// Tool outputs.
type (
	sendOut struct {
		Seq        int64    `json:"seq"`
		ID         string   `json:"id"`
		Mentions   []string `json:"mentions"`
		To         string   `json:"to,omitempty"`
		ResourceID string   `json:"resource_id,omitempty"`
	}
	messagesOut struct {
		Messages []api.Message `json:"messages"`
		Count    int           `json:"count"`
	}
	inboxOut struct {
		Messages []api.Message `json:"messages"`
		Count    int           `json:"count"`
		// NewestSeq is what to pass to my_inbox_ack once they are handled.
		NewestSeq int64 `json:"newest_seq"`
	}
	ackOut struct {
		Cursor int64 `json:"cursor"`
	}
	statusOut struct {
		State string `json:"state"`
		Task  string `json:"task"`
	}
	member struct {
		Name    string `json:"name"`
		Backend string `json:"backend"`
		State   string `json:"state"`
		Status  string `json:"status,omitempty"`
		Task    string `json:"task,omitempty"`
		You     bool   `json:"you"`
	}
	membersOut struct {
		Members []member `json:"members"`
		Count   int      `json:"count"`
	}
	docOut struct {
		File    string `json:"file"`
		Content string `json:"content"`
	}
	docWriteOut struct {
		File string `json:"file"`
	}
	docListOut struct {
		Documents []api.DocumentInfo `json:"documents"`
		Count     int                `json:"count"`
	}
	voteView struct {
		Voter  string `json:"voter"`
		Choice string `json:"choice"`
		Reason string `json:"reason,omitempty"`
	}
	proposalView struct {
		ID         string     `json:"id"`
		Type       string     `json:"type"`
		Title      string     `json:"title"`
		Creator    string     `json:"creator"`
		Options    []string   `json:"options"`
		Resolution string     `json:"resolution"`
		Quorum     int        `json:"quorum"`
		Binding    bool       `json:"binding"`
		State      string     `json:"state"`
		Winner     string     `json:"winner,omitempty"`
		Votes      []voteView `json:"votes"`
		ExpiresAt  time.Time  `json:"expires_at"`
	}
	proposalsOut struct {
		Proposals []proposalView `json:"proposals"`
		Count     int            `json:"count"`
	}
	resourceOut struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Content string `json:"content,omitempty"`
		From    string `json:"from,omitempty"`
	}
)

// maxReadLimit bounds channel_read (SPEC.md: limit ≤ 200).
const maxReadLimit = 200

func (s *Server) addTools(srv *mcp.Server, me store.AgentKey) {
	scope := me.Scope()
	ctxSvc := s.svc

	tool(s, srv, me, tools.ChannelSend,
		"Post a message to your team's channel. Mention teammates with @name to put it in their inbox and wake them (@all for everyone); set `to` for a direct message. Messages over the team's limit are stored as a resource automatically.",
		func(ctx context.Context, in tools.SendArgs) (sendOut, string, error) {
			m, err := ctxSvc.Send(ctx, team.SendRequest{Scope: scope, From: me.Name, Content: in.Message, To: in.To})
			if err != nil {
				return sendOut{}, "", err
			}
			out := sendOut{Seq: m.Seq, ID: m.ID, Mentions: nonNil(m.Recipients), To: m.To, ResourceID: m.ResourceID}
			return out, fmt.Sprintf("sent as #%d%s", m.Seq, mentionList(m.Recipients)), nil
		})

	tool(s, srv, me, tools.ChannelRead,
		"Read your team's channel, oldest first: the latest messages, or those after since_seq. Direct messages appear only to their sender and recipient; kind=system lines come from the daemon.",
		func(ctx context.Context, in tools.ReadArgs) (messagesOut, string, error) {
			if in.Limit < 0 || in.Limit > maxReadLimit {
				return messagesOut{}, "", api.Errorf(api.CodeInvalid, "limit must be between 1 and %d", maxReadLimit)
			}
			ms, err := ctxSvc.Read(ctx, scope, me.Name, in.SinceSeq, in.Limit)
			if err != nil {
				return messagesOut{}, "", err
			}
			return messagesOut{Messages: team.APIMessages(ms), Count: len(ms)}, renderMessages(ms, "no messages"), nil
		})

	tool(s, srv, me, tools.MyInbox,
		"List the unread messages addressed to you (mentions, @all and direct messages), oldest first. Reading does not mark them read: call my_inbox_ack with newest_seq when you have handled them.",
		func(ctx context.Context, _ tools.NoArgs) (inboxOut, string, error) {
			ms, err := ctxSvc.Inbox(ctx, me)
			if err != nil {
				return inboxOut{}, "", err
			}
			// A run sees exactly the messages it will ack on success;
			// later ones are for the next run.
			if id := runOf(ctx); id != "" {
				until, err := s.db.RunInboxUntil(ctx, id)
				if err != nil {
					return inboxOut{}, "", err
				}
				for len(ms) > 0 && ms[len(ms)-1].Seq > until {
					ms = ms[:len(ms)-1]
				}
			}
			out := inboxOut{Messages: team.APIMessages(ms), Count: len(ms)}
			if len(ms) > 0 {
				out.NewestSeq = ms[len(ms)-1].Seq
			}
			return out, fmt.Sprintf("%d unread (newest_seq %d)\n%s", len(ms), out.NewestSeq, renderMessages(ms, "")), nil
		})

	tool(s, srv, me, tools.MyInboxAck,
		"Mark your inbox read up to and including until_seq (use newest_seq from my_inbox). Only moves forward; acking an older seq does nothing.",
		func(ctx context.Context, in tools.AckArgs) (ackOut, string, error) {
			cur, err := ctxSvc.Ack(ctx, me, in.UntilSeq)
			if err != nil {
				return ackOut{}, "", err
			}
			return ackOut{Cursor: cur}, fmt.Sprintf("inbox read up to #%d", cur), nil
		})

	tool(s, srv, me, tools.MyStatusSet,
		"Tell your team what you are doing: a one-word state and/or the task you are on. Teammates see it in team_members.",
		func(ctx context.Context, in tools.StatusArgs) (statusOut, string, error) {
			if in.State == nil && in.Task == nil {
				return statusOut{}, "", api.Errorf(api.CodeInvalid, "give state, task or both")
			}
			if err := ctxSvc.SetStatus(ctx, me, in.State, in.Task); err != nil {
				return statusOut{}, "", err
			}
			a, err := s.db.GetAgent(ctx, me)
			if err != nil {
				return statusOut{}, "", err
			}
			return statusOut{State: a.Status, Task: a.Task}, "status updated", nil
		})

	tool(s, srv, me, tools.TeamMembers,
		"List your teammates with their state and current task; `you` marks yourself. Mention them as @name.",
		func(ctx context.Context, _ tools.NoArgs) (membersOut, string, error) {
			agents, err := ctxSvc.Members(ctx, scope)
			if err != nil {
				return membersOut{}, "", err
			}
			out := membersOut{Members: []member{}}
			var lines []string
			for _, a := range agents {
				m := member{Name: a.Name, Backend: a.Backend, State: a.State, Status: a.Status, Task: a.Task, You: a.Name == me.Name}
				out.Members = append(out.Members, m)
				line := "@" + a.Name + " (" + a.State
				if a.Status != "" {
					line += ", " + a.Status
				}
				line += ")"
				if a.Task != "" {
					line += ": " + a.Task
				}
				if m.You {
					line += " ← you"
				}
				lines = append(lines, line)
			}
			out.Count = len(out.Members)
			return out, strings.Join(lines, "\n"), nil
		})

	tool(s, srv, me, tools.TeamDocRead,
		"Read a shared team document (default notes.md). An unwritten notes.md reads as empty.",
		func(ctx context.Context, in tools.DocArgs) (docOut, string, error) {
			c, err := ctxSvc.DocRead(ctx, scope, in.File)
			if err != nil {
				return docOut{}, "", err
			}
			text := c
			if text == "" {
				text = "(empty document)"
			}
			return docOut{File: docName(in.File), Content: c}, text, nil
		})

	tool(s, srv, me, tools.TeamDocWrite,
		"Replace the whole content of a shared team document (default notes.md), creating it if needed.",
		func(ctx context.Context, in tools.DocWriteArgs) (docWriteOut, string, error) {
			if err := ctxSvc.DocWrite(ctx, scope, me.Name, in.File, in.Content); err != nil {
				return docWriteOut{}, "", err
			}
			return docWriteOut{File: docName(in.File)}, "wrote " + docName(in.File), nil
		})

	tool(s, srv, me, tools.TeamDocAppend,
		"Append text to the end of a shared team document (default notes.md), creating it if needed. Safer than write when teammates edit too.",
		func(ctx context.Context, in tools.DocWriteArgs) (docWriteOut, string, error) {
			if err := ctxSvc.DocAppend(ctx, scope, me.Name, in.File, in.Content); err != nil {
				return docWriteOut{}, "", err
			}
			return docWriteOut{File: docName(in.File)}, "appended to " + docName(in.File), nil
		})

	tool(s, srv, me, tools.TeamDocCreate,
		"Create a new shared team document; fails if one with that name exists (use team_doc_write to replace).",
		func(ctx context.Context, in tools.DocCreateArgs) (docWriteOut, string, error) {
			if err := ctxSvc.DocCreate(ctx, scope, me.Name, in.File, in.Content); err != nil {
				return docWriteOut{}, "", err
			}
			return docWriteOut{File: in.File}, "created " + in.File, nil
		})

	tool(s, srv, me, tools.TeamDocList,
		"List the team's shared documents with their sizes.",
		func(ctx context.Context, _ tools.NoArgs) (docListOut, string, error) {
			docs, err := ctxSvc.DocList(ctx, scope)
			if err != nil {
				return docListOut{}, "", err
			}
			out := docListOut{Documents: []api.DocumentInfo{}}
			var names []string
			for _, d := range docs {
				out.Documents = append(out.Documents, api.DocumentInfo{Path: d.Path, Size: d.Size, UpdatedAt: d.UpdatedAt})
				names = append(names, fmt.Sprintf("%s (%d bytes)", d.Path, d.Size))
			}
			out.Count = len(docs)
			if len(names) == 0 {
				return out, "no documents", nil
			}
			return out, strings.Join(names, "\n"), nil
		})

	tool(s, srv, me, tools.TeamProposalCreate,
		"Open a proposal for the team to vote on (election, decision, approval or assignment). Teammates are notified; it resolves when enough votes meet its rule, or when it expires.",
		func(ctx context.Context, in tools.ProposalArgs) (proposalView, string, error) {
			np := store.NewProposal{Workflow: scope.Workflow, Tag: scope.Tag, Creator: me.Name, Type: in.Type,
				Title: in.Title, Options: in.Options, Resolution: in.Resolution, Quorum: in.Quorum, Binding: in.Binding}
			if in.Resolution == "creator-decides" {
				np.Resolution, np.TieBreaker = "plurality", "creator-decides"
			}
			if in.ExpiresIn != "" {
				d, err := time.ParseDuration(in.ExpiresIn)
				if err != nil || d <= 0 {
					return proposalView{}, "", api.Errorf(api.CodeInvalid, "expires_in %q is not a duration: write e.g. 30m or 2h", in.ExpiresIn)
				}
				np.ExpiresIn = d
			}
			p, err := ctxSvc.CreateProposal(ctx, np)
			if err != nil {
				return proposalView{}, "", err
			}
			return view(p), fmt.Sprintf("opened %s %q: options %s", p.ID, p.Title, strings.Join(p.Options, ", ")), nil
		})

	tool(s, srv, me, tools.TeamVote,
		"Vote on an active proposal. Voting again replaces your earlier vote.",
		func(ctx context.Context, in tools.VoteArgs) (proposalView, string, error) {
			p, err := ctxSvc.Vote(ctx, scope, in.Proposal, me.Name, in.Choice, in.Reason)
			if err != nil {
				return proposalView{}, "", err
			}
			return view(p), summary(p), nil
		})

	tool(s, srv, me, tools.TeamProposalStatus,
		"Show one proposal with its votes, or (without an id) every active proposal of the team.",
		func(ctx context.Context, in tools.ProposalRefArgs) (proposalsOut, string, error) {
			var ps []store.Proposal
			if in.Proposal != "" {
				p, err := ctxSvc.Proposal(ctx, scope, in.Proposal)
				if err != nil {
					return proposalsOut{}, "", err
				}
				ps = []store.Proposal{p}
			} else {
				var err error
				if ps, err = ctxSvc.Proposals(ctx, scope, true); err != nil {
					return proposalsOut{}, "", err
				}
			}
			out := proposalsOut{Proposals: []proposalView{}, Count: len(ps)}
			var lines []string
			for _, p := range ps {
				out.Proposals = append(out.Proposals, view(p))
				lines = append(lines, summary(p))
			}
			if len(lines) == 0 {
				return out, "no active proposals", nil
			}
			return out, strings.Join(lines, "\n"), nil
		})

	tool(s, srv, me, tools.TeamProposalCancel,
		"Cancel an active proposal you created.",
		func(ctx context.Context, in tools.CancelArgs) (proposalView, string, error) {
			p, err := ctxSvc.CancelProposal(ctx, scope, in.Proposal, me.Name)
			if err != nil {
				return proposalView{}, "", err
			}
			return view(p), "cancelled " + p.ID, nil
		})

	tool(s, srv, me, tools.ResourceCreate,
		"Store large content (a diff, a report, JSON) and get an id to pass around in messages instead of the content itself.",
		func(ctx context.Context, in tools.ResourceArgs) (resourceOut, string, error) {
			r, err := ctxSvc.CreateResource(ctx, me, in.Content, in.Type)
			if err != nil {
				return resourceOut{}, "", err
			}
			return resourceOut{ID: r.ID, Type: r.Type}, fmt.Sprintf("stored as %s; teammates read it with resource_read(%q)", r.ID, r.ID), nil
		})

	tool(s, srv, me, tools.ResourceRead,
		"Read a resource of your team by its id (res_…), e.g. a long message stored as a resource.",
		func(ctx context.Context, in tools.ResourceReadArgs) (resourceOut, string, error) {
			r, err := ctxSvc.ReadResource(ctx, scope, in.ID)
			if err != nil {
				return resourceOut{}, "", err
			}
			return resourceOut{ID: r.ID, Type: r.Type, Content: r.Content, From: r.CreatedBy}, r.Content, nil
		})
}

func view(p store.Proposal) proposalView {
	v := proposalView{ID: p.ID, Type: p.Type, Title: p.Title, Creator: p.Creator, Options: p.Options,
		Resolution: p.Resolution, Quorum: p.Quorum, Binding: p.Binding, State: p.State, Winner: p.Winner,
		Votes: []voteView{}, ExpiresAt: p.ExpiresAt}
	if p.TieBreaker == "creator-decides" {
		v.Resolution = "creator-decides"
	}
	for _, vt := range p.Votes {
		v.Votes = append(v.Votes, voteView{Voter: vt.Voter, Choice: vt.Choice, Reason: vt.Reason})
	}
	return v
}

func summary(p store.Proposal) string {
	s := fmt.Sprintf("%s %q: %s, %d of %d votes", p.ID, p.Title, p.State, len(p.Votes), p.Quorum)
	if p.Winner != "" {
		s += ", winner " + p.Winner
	}
	return s
}

func renderMessages(ms []store.Message, empty string) string {
	if len(ms) == 0 {
		return empty
	}
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "#%d %s", m.Seq, m.Sender)
		switch {
		case m.To != "":
			b.WriteString(" → " + m.To + " (DM)")
		case m.Kind != store.KindMessage:
			b.WriteString(" (" + m.Kind + ")")
		}
		b.WriteString(": " + m.Content + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func mentionList(names []string) string {
	if len(names) == 0 {
		return " (no one mentioned)"
	}
	return " to @" + strings.Join(names, " @")
}

func docName(f string) string {
	if f == "" {
		return "notes.md"
	}
	return f
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
