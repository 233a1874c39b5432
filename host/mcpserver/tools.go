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

// maxReadLimit bounds channel_read (SPEC.md: limit ≤ 200).
const maxReadLimit = 200

// addTools registers every tool of the daemon's MCP server for agent me,
// by group; each tool acts as me, in me's team.
func (s *Server) addTools(srv *mcp.Server, me store.AgentKey) {
	s.addChannelTools(srv, me)
	s.addInboxTools(srv, me)
	s.addPresenceTools(srv, me)
	s.addDocTools(srv, me)
	s.addProposalTools(srv, me)
	s.addResourceTools(srv, me)
	s.addAgentTools(srv, me)
	s.addWorktreeTools(srv, me)
	s.addEffortTools(srv, me)
	s.addTaskTools(srv, me)
	s.addQuestionTools(srv, me)
	s.addApprovalTools(srv, me)
	s.addSearchTools(srv, me)
}

// addChannelTools registers channel_send and channel_read: posting to and
// reading the team's channel.
func (s *Server) addChannelTools(srv *mcp.Server, me store.AgentKey) {
	scope := me.Scope()
	tool(s, srv, me, tools.ChannelSend,
		"Post a message to your team's channel. Mention teammates with @name to put it in their inbox and wake them (@all for everyone); set `to` for a direct message. Messages over the team's limit are stored as a resource automatically.",
		func(ctx context.Context, in tools.SendArgs) (tools.SendResult, string, error) {
			m, err := s.svc.Send(ctx, team.SendRequest{Scope: scope, From: me.Name, Content: in.Message, To: in.To})
			if err != nil {
				return tools.SendResult{}, "", err
			}
			out := tools.SendResult{Seq: m.Seq, ID: m.ID, Mentions: nonNil(m.Recipients), To: m.To, ResourceID: m.ResourceID,
				Warnings: s.svc.SendWarnings(ctx, m)}
			text := fmt.Sprintf("sent as #%d%s", m.Seq, mentionList(m.Recipients))
			for _, w := range out.Warnings {
				text += "\nwarning: " + w
			}
			return out, text, nil
		})

	tool(s, srv, me, tools.ChannelRead,
		"Read your team's channel, oldest first: the latest messages, or those after since_seq. Direct messages appear only to their sender and recipient; kind=system lines come from the daemon.",
		func(ctx context.Context, in tools.ReadArgs) (tools.MessagesResult, string, error) {
			if in.Limit < 0 || in.Limit > maxReadLimit {
				return tools.MessagesResult{}, "", api.Errorf(api.CodeInvalid, "limit must be between 1 and %d", maxReadLimit)
			}
			ms, err := s.svc.Read(ctx, scope, me.Name, in.SinceSeq, in.Limit)
			if err != nil {
				return tools.MessagesResult{}, "", err
			}
			return tools.MessagesResult{Messages: team.APIMessages(ms), Count: len(ms)}, renderMessages(ms, "no messages"), nil
		})
}

// addInboxTools registers my_inbox and my_inbox_ack: what is addressed to
// the agent, and marking it read.
func (s *Server) addInboxTools(srv *mcp.Server, me store.AgentKey) {
	tool(s, srv, me, tools.MyInbox,
		"List the unread messages addressed to you (mentions, @all and direct messages), oldest first. Reading does not mark them read: call my_inbox_ack with newest_seq when you have handled them.",
		func(ctx context.Context, _ tools.NoArgs) (tools.InboxResult, string, error) {
			ms, err := s.svc.Inbox(ctx, me)
			if err != nil {
				return tools.InboxResult{}, "", err
			}
			// A run sees exactly the messages it will ack on success;
			// later ones are for the next run.
			if id := runOf(ctx); id != "" {
				until, err := s.db.RunInboxUntil(ctx, id)
				if err != nil {
					return tools.InboxResult{}, "", err
				}
				ms = shownUntil(ms, until)
			}
			out := inboxResult(ms)
			return out, fmt.Sprintf("%d unread (newest_seq %d)\n%s", len(ms), out.NewestSeq, renderMessages(ms, "")), nil
		})

	tool(s, srv, me, tools.MyInboxAck,
		"Mark your inbox read up to and including until_seq (use newest_seq from my_inbox). Only moves forward; acking an older seq does nothing.",
		func(ctx context.Context, in tools.AckArgs) (tools.AckResult, string, error) {
			cur, err := s.svc.Ack(ctx, me, in.UntilSeq)
			if err != nil {
				return tools.AckResult{}, "", err
			}
			return tools.AckResult{Cursor: cur}, fmt.Sprintf("inbox read up to #%d", cur), nil
		})
}

// addPresenceTools registers my_status_set and team_members: what the agent
// tells its team it is doing, and what the others are doing.
func (s *Server) addPresenceTools(srv *mcp.Server, me store.AgentKey) {
	scope := me.Scope()
	tool(s, srv, me, tools.MyStatusSet,
		"Tell your team what you are doing: a one-word state and/or the task you are on. Teammates see it in team_members.",
		func(ctx context.Context, in tools.StatusArgs) (tools.StatusResult, string, error) {
			if in.State == nil && in.Task == nil {
				return tools.StatusResult{}, "", api.Errorf(api.CodeInvalid, "give state, task or both")
			}
			if err := s.svc.SetStatus(ctx, me, in.State, in.Task); err != nil {
				return tools.StatusResult{}, "", err
			}
			a, err := s.db.GetAgent(ctx, me)
			if err != nil {
				return tools.StatusResult{}, "", err
			}
			return tools.StatusResult{State: a.Status, Task: a.Task}, "status updated", nil
		})

	tool(s, srv, me, tools.TeamMembers,
		"List your teammates with their state and current task; `you` marks yourself. Mention them as @name.",
		func(ctx context.Context, _ tools.NoArgs) (tools.MembersResult, string, error) {
			agents, err := s.svc.Members(ctx, scope)
			if err != nil {
				return tools.MembersResult{}, "", err
			}
			out := tools.MembersResult{Members: []tools.Member{}}
			var lines []string
			for _, a := range agents {
				m := tools.Member{Name: a.Name, Backend: a.Backend, State: string(a.State), Status: a.Status, Task: a.Task, Roles: a.Roles, You: a.Name == me.Name}
				out.Members = append(out.Members, m)
				line := "@" + a.Name + " (" + string(a.State)
				if len(a.Roles) > 0 {
					line += ", roles " + strings.Join(a.Roles, ", ")
				}
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
}

// addDocTools registers the team_doc_* tools over the team's shared
// documents.
func (s *Server) addDocTools(srv *mcp.Server, me store.AgentKey) {
	scope := me.Scope()
	tool(s, srv, me, tools.TeamDocRead,
		"Read a shared team document (default notes.md). An unwritten notes.md reads as empty.",
		func(ctx context.Context, in tools.DocArgs) (tools.DocResult, string, error) {
			c, err := s.svc.DocRead(ctx, scope, in.File)
			if err != nil {
				return tools.DocResult{}, "", err
			}
			text := c
			if text == "" {
				text = "(empty document)"
			}
			return tools.DocResult{File: docName(in.File), Content: c}, text, nil
		})

	tool(s, srv, me, tools.TeamDocWrite,
		"Replace the whole content of a shared team document (default notes.md), creating it if needed.",
		func(ctx context.Context, in tools.DocWriteArgs) (tools.DocWritten, string, error) {
			if err := s.svc.DocWrite(ctx, scope, me.Name, in.File, in.Content); err != nil {
				return tools.DocWritten{}, "", err
			}
			return tools.DocWritten{File: docName(in.File)}, "wrote " + docName(in.File), nil
		})

	tool(s, srv, me, tools.TeamDocAppend,
		"Append text to the end of a shared team document (default notes.md), creating it if needed. Safer than write when teammates edit too.",
		func(ctx context.Context, in tools.DocWriteArgs) (tools.DocWritten, string, error) {
			if err := s.svc.DocAppend(ctx, scope, me.Name, in.File, in.Content); err != nil {
				return tools.DocWritten{}, "", err
			}
			return tools.DocWritten{File: docName(in.File)}, "appended to " + docName(in.File), nil
		})

	tool(s, srv, me, tools.TeamDocCreate,
		"Create a new shared team document; fails if one with that name exists (use team_doc_write to replace).",
		func(ctx context.Context, in tools.DocCreateArgs) (tools.DocWritten, string, error) {
			if err := s.svc.DocCreate(ctx, scope, me.Name, in.File, in.Content); err != nil {
				return tools.DocWritten{}, "", err
			}
			return tools.DocWritten{File: in.File}, "created " + in.File, nil
		})

	tool(s, srv, me, tools.TeamDocList,
		"List the team's shared documents with their sizes.",
		func(ctx context.Context, _ tools.NoArgs) (tools.DocListResult, string, error) {
			out, err := s.docList(ctx, scope)
			if err != nil {
				return tools.DocListResult{}, "", err
			}
			var names []string
			for _, d := range out.Documents {
				names = append(names, fmt.Sprintf("%s (%d bytes)", d.Path, d.Size))
			}
			if len(names) == 0 {
				return out, "no documents", nil
			}
			return out, strings.Join(names, "\n"), nil
		})
}

// addProposalTools registers the team's proposals and votes.
func (s *Server) addProposalTools(srv *mcp.Server, me store.AgentKey) {
	scope := me.Scope()
	tool(s, srv, me, tools.TeamProposalCreate,
		"Open a proposal for the team to vote on (election, decision, approval or assignment). Teammates are notified; it resolves when enough votes meet its rule, or when it expires.",
		func(ctx context.Context, in tools.ProposalArgs) (tools.Proposal, string, error) {
			np := store.NewProposal{Workflow: scope.Workflow, Tag: scope.Tag, Creator: me.Name, Type: in.Type,
				Title: in.Title, Options: in.Options, Resolution: in.Resolution, Quorum: in.Quorum, Binding: in.Binding}
			if in.Resolution == "creator-decides" {
				np.Resolution, np.TieBreaker = "plurality", "creator-decides"
			}
			if in.ExpiresIn != "" {
				d, err := time.ParseDuration(in.ExpiresIn)
				if err != nil || d <= 0 {
					return tools.Proposal{}, "", api.Errorf(api.CodeInvalid, "expires_in %q is not a duration: write e.g. 30m or 2h", in.ExpiresIn)
				}
				np.ExpiresIn = d
			}
			p, err := s.svc.CreateProposal(ctx, np)
			if err != nil {
				return tools.Proposal{}, "", err
			}
			return team.APIProposal(p), fmt.Sprintf("opened %s %q: options %s", p.ID, p.Title, strings.Join(p.Options, ", ")), nil
		})

	tool(s, srv, me, tools.TeamVote,
		"Vote on an active proposal. Voting again replaces your earlier vote.",
		func(ctx context.Context, in tools.VoteArgs) (tools.Proposal, string, error) {
			p, err := s.svc.Vote(ctx, scope, in.Proposal, me.Name, in.Choice, in.Reason)
			if err != nil {
				return tools.Proposal{}, "", err
			}
			return team.APIProposal(p), summary(p), nil
		})

	tool(s, srv, me, tools.TeamProposalStatus,
		"Show one proposal with its votes, or (without an id) every active proposal of the team.",
		func(ctx context.Context, in tools.ProposalRefArgs) (tools.ProposalsResult, string, error) {
			var ps []store.Proposal
			if in.Proposal != "" {
				p, err := s.svc.Proposal(ctx, scope, in.Proposal)
				if err != nil {
					return tools.ProposalsResult{}, "", err
				}
				ps = []store.Proposal{p}
			} else {
				var err error
				if ps, err = s.svc.Proposals(ctx, scope, true); err != nil {
					return tools.ProposalsResult{}, "", err
				}
			}
			out := tools.ProposalsResult{Proposals: []tools.Proposal{}, Count: len(ps)}
			var lines []string
			for _, p := range ps {
				out.Proposals = append(out.Proposals, team.APIProposal(p))
				lines = append(lines, summary(p))
			}
			if len(lines) == 0 {
				return out, "no active proposals", nil
			}
			return out, strings.Join(lines, "\n"), nil
		})

	tool(s, srv, me, tools.TeamProposalCancel,
		"Cancel an active proposal you created.",
		func(ctx context.Context, in tools.CancelArgs) (tools.Proposal, string, error) {
			p, err := s.svc.CancelProposal(ctx, scope, in.Proposal, me.Name)
			if err != nil {
				return tools.Proposal{}, "", err
			}
			return team.APIProposal(p), "cancelled " + p.ID, nil
		})
}

// addResourceTools registers resource_create and resource_read: large
// content passed around by id.
func (s *Server) addResourceTools(srv *mcp.Server, me store.AgentKey) {
	scope := me.Scope()
	tool(s, srv, me, tools.ResourceCreate,
		"Store large content (a diff, a report, JSON) and get an id to pass around in messages instead of the content itself.",
		func(ctx context.Context, in tools.ResourceArgs) (tools.ResourceResult, string, error) {
			r, err := s.svc.CreateResource(ctx, me, in.Content, in.Type)
			if err != nil {
				return tools.ResourceResult{}, "", err
			}
			return tools.ResourceResult{ID: r.ID, Type: r.Type}, fmt.Sprintf("stored as %s; teammates read it with resource_read(%q)", r.ID, r.ID), nil
		})

	tool(s, srv, me, tools.ResourceRead,
		"Read a resource of your team by its id (res_…), e.g. a long message stored as a resource.",
		func(ctx context.Context, in tools.ResourceReadArgs) (tools.ResourceResult, string, error) {
			r, err := s.svc.ReadResource(ctx, scope, in.ID)
			if err != nil {
				return tools.ResourceResult{}, "", err
			}
			return tools.ResourceResult{ID: r.ID, Type: r.Type, Content: r.Content, From: r.CreatedBy}, r.Content, nil
		})
}

// shownUntil is the part of an inbox page a run is shown: the messages up to
// until, the newest it acks on success.
func shownUntil(ms []store.Message, until int64) []store.Message {
	for len(ms) > 0 && ms[len(ms)-1].Seq > until {
		ms = ms[:len(ms)-1]
	}
	return ms
}

// inboxResult is my_inbox's answer for the messages ms.
func inboxResult(ms []store.Message) tools.InboxResult {
	out := tools.InboxResult{Messages: team.APIMessages(ms), Count: len(ms)}
	if len(ms) > 0 {
		out.NewestSeq = ms[len(ms)-1].Seq
	}
	return out
}

// docList is team_doc_list's answer for scope.
func (s *Server) docList(ctx context.Context, scope store.Scope) (tools.DocListResult, error) {
	docs, err := s.svc.DocList(ctx, scope)
	if err != nil {
		return tools.DocListResult{}, err
	}
	out := tools.DocListResult{Documents: make([]tools.DocumentInfo, 0, len(docs)), Count: len(docs)}
	for _, d := range docs {
		out.Documents = append(out.Documents, tools.DocumentInfo{Path: d.Path, Size: d.Size, UpdatedAt: d.UpdatedAt})
	}
	return out, nil
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

// addAgentTools registers agent_spawn and agent_stop: a planner (an agent
// with can_spawn) brings helpers into its team and lets them go.
func (s *Server) addAgentTools(srv *mcp.Server, me store.AgentKey) {
	scope := me.Scope()
	tool(s, srv, me, tools.AgentSpawn,
		"Bring a new agent into your team (only if you have can_spawn; at most your max_spawned live at once). It joins your workflow with its own inbox and runs when mentioned: after spawning, @mention it with its task.",
		func(ctx context.Context, in tools.SpawnArgs) (tools.SpawnResult, string, error) {
			if s.Spawner == nil {
				return tools.SpawnResult{}, "", api.Errorf(api.CodeUnavailable, "this daemon cannot spawn agents")
			}
			a, live, max, err := s.Spawner.Spawn(ctx, me, in.Name, in.SystemPrompt, in.Backend, in.Model, in.Roles)
			if err != nil {
				return tools.SpawnResult{}, "", err
			}
			line := fmt.Sprintf("%s spawned %s (%s%s)", me.Name, a.Name, a.Backend, modelSuffix(a.Model))
			if _, err := s.svc.Send(ctx, team.SendRequest{Scope: scope, From: team.SenderSystem, Content: line, Kind: store.KindSystem, ByAgent: true}); err != nil {
				s.log.Warn("announce a spawned agent", "agent", a.Key().String(), "error", err)
			}
			out := tools.SpawnResult{Name: a.Name, Backend: a.Backend, Model: a.Model, Live: live, Max: max}
			return out, fmt.Sprintf("spawned %s on %s%s (%d of %d live); mention @%s to give it work", a.Name, a.Backend, modelSuffix(a.Model), live, max, a.Name), nil
		})

	tool(s, srv, me, tools.AgentStop,
		"Stop an agent you spawned: its run in flight ends and it runs no more. Its messages and history stay.",
		func(ctx context.Context, in tools.StopArgs) (tools.StopResult, string, error) {
			if s.Spawner == nil {
				return tools.StopResult{}, "", api.Errorf(api.CodeUnavailable, "this daemon cannot stop spawned agents")
			}
			a, err := s.Spawner.StopSpawned(ctx, me, in.Name)
			if err != nil {
				return tools.StopResult{}, "", err
			}
			line := fmt.Sprintf("%s stopped %s", me.Name, a.Name)
			if _, err := s.svc.Send(ctx, team.SendRequest{Scope: scope, From: team.SenderSystem, Content: line, Kind: store.KindSystem, ByAgent: true}); err != nil {
				s.log.Warn("announce a stopped agent", "agent", a.Key().String(), "error", err)
			}
			return tools.StopResult{Name: a.Name, State: string(a.State)}, "stopped " + a.Name, nil
		})
}

func modelSuffix(model string) string {
	if model == "" {
		return ""
	}
	return ", " + model
}
