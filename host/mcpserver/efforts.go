package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/efforts"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// Efforts walks the agents' efforts (host/efforts.Service); every call
// acts as the agent of the MCP session.
type Efforts interface {
	Start(ctx context.Context, req efforts.StartRequest) (tools.EffortResult, error)
	Continue(ctx context.Context, st efforts.Step) (tools.EffortResult, error)
	Finish(ctx context.Context, f efforts.FinishRequest) (tools.EffortResult, error)
	Log(ctx context.Context, agent store.AgentKey, text string) (tools.EffortResult, error)
	Status(ctx context.Context, agent store.AgentKey, withToken bool) (tools.EffortResult, error)
	RunContext(ctx context.Context, agent store.AgentKey) (*tools.EffortContext, error)
}

var _ Efforts = (*efforts.Service)(nil)

// addEffortTools registers effort_start, effort_continue, effort_status,
// effort_log and effort_finish.
func (s *Server) addEffortTools(srv *mcp.Server, me store.AgentKey) {
	tool(s, srv, me, tools.EffortStart,
		"Start an effort: walk a skill (a procedure of phases, e.g. implement) over a work directory, one phase at a time. Answers the first phase's instructions, what earlier efforts on the directory left (debriefs) and a continue token. You have at most one active effort.",
		func(ctx context.Context, in tools.EffortStartArgs) (tools.EffortResult, string, error) {
			if s.Efforts == nil {
				return tools.EffortResult{}, "", noEfforts()
			}
			res, err := s.Efforts.Start(ctx, efforts.StartRequest{Agent: me, Dir: in.Dir, Skill: in.Skill, Mode: in.Mode, Run: runOf(ctx)})
			return res, EffortText(res), err
		})
	tool(s, srv, me, tools.EffortContinue,
		"Leave the current phase of your effort: give its token and its proof (an object with the fields the phase asks for). The daemon also checks the phase's evidence (what it saw you do in this phase). Answers the next phase and a new token, or, from the last phase, finishes the effort. A refusal lists everything missing; a token is good once.",
		func(ctx context.Context, in tools.EffortContinueArgs) (tools.EffortResult, string, error) {
			if s.Efforts == nil {
				return tools.EffortResult{}, "", noEfforts()
			}
			if strings.TrimSpace(in.Token) == "" {
				// Only the owner's CLI continues without one; an agent
				// gives the token that answered it the phase it leaves.
				return tools.EffortResult{}, "", api.Errorf(api.CodeInvalid, "effort_continue needs the token the last effort tool answered (effort_status shows it again)")
			}
			s.caughtUp(ctx, tools.EffortContinue)
			res, err := s.Efforts.Continue(ctx, efforts.Step{Agent: me, Token: in.Token, Proof: efforts.Proof{Typed: in.Proof}, Notes: in.Notes, Run: runOf(ctx)})
			return res, EffortText(res), err
		})
	tool(s, srv, me, tools.EffortStatus,
		"Show your active effort: the phase you are in, its instructions, the proof it asks for, the evidence not observed yet, and its token again.",
		func(ctx context.Context, _ tools.NoArgs) (tools.EffortResult, string, error) {
			if s.Efforts == nil {
				return tools.EffortResult{}, "", noEfforts()
			}
			res, err := s.Efforts.Status(ctx, me, true)
			return res, EffortText(res), err
		})
	tool(s, srv, me, tools.EffortLog,
		"Append an entry (a decision and why, a dead end) to your effort's log file in its directory, dated. It also tells the daemon you are alive.",
		func(ctx context.Context, in tools.EffortLogArgs) (tools.EffortResult, string, error) {
			if s.Efforts == nil {
				return tools.EffortResult{}, "", noEfforts()
			}
			res, err := s.Efforts.Log(ctx, me, in.Text)
			return res, "logged in " + res.Log, err
		})
	tool(s, srv, me, tools.EffortFinish,
		"Finish your effort from its last phase (with that phase's proof; its evidence must have been observed), or give it up with abandon and a reason. notes are the debrief the next effort on the directory reads.",
		func(ctx context.Context, in tools.EffortFinishArgs) (tools.EffortResult, string, error) {
			if s.Efforts == nil {
				return tools.EffortResult{}, "", noEfforts()
			}
			s.caughtUp(ctx, tools.EffortFinish)
			res, err := s.Efforts.Finish(ctx, efforts.FinishRequest{Agent: me, Token: in.Token, Abandon: in.Abandon, Reason: in.Reason,
				Notes: in.Notes, Proof: efforts.Proof{Typed: in.Proof}, Run: runOf(ctx)})
			return res, EffortText(res), err
		})
}

func noEfforts() error { return api.Errorf(api.CodeUnavailable, "this daemon serves no efforts") }

// EffortText is an effort tool's answer as text: where the effort is and
// what the phase asks for.
func EffortText(r tools.EffortResult) string {
	if r.Effort == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "effort %s: %s #%d on %s, %s", r.Effort, r.Skill, r.Ordinal, r.Dir, r.State)
	for _, d := range r.Debriefs {
		fmt.Fprintf(&b, "\n\nwhat effort %d (%s) left:\n%s", d.Ordinal, d.Skill, d.Text)
	}
	if len(r.Earlier) > 0 {
		b.WriteString("\n\nearlier notes the team's search found:")
		for _, n := range r.Earlier {
			b.WriteString("\n- " + searchLine(n))
		}
	}
	if p := r.Phase; p != nil {
		b.WriteString("\n\n" + PhaseText(*p))
	} else if r.State == "finished" && len(r.Next) > 0 {
		fmt.Fprintf(&b, "\nlast phase done: finished. Suggested next: %s", strings.Join(r.Next, ", "))
	}
	if r.Token != "" {
		fmt.Fprintf(&b, "\n\ntoken: %s", r.Token)
	}
	return b.String()
}

// PhaseText is a phase as an agent reads it.
func PhaseText(p tools.EffortPhase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %d of %d: %s", p.N, p.Of, p.Name)
	if p.Instructions != "" {
		b.WriteString("\n" + p.Instructions)
	}
	if p.Tools != "" {
		b.WriteString("\ntools: " + p.Tools)
	}
	if len(p.Artifacts) > 0 {
		b.WriteString("\nwrites: " + strings.Join(p.Artifacts, ", "))
	}
	if len(p.Proof) > 0 {
		fields := make([]string, len(p.Proof))
		for i, f := range p.Proof {
			fields[i] = f.Name + " (" + f.Type
			if f.Optional {
				fields[i] += ", optional"
			}
			fields[i] += ")"
			if f.Description != "" {
				fields[i] += ": " + f.Description
			}
		}
		b.WriteString("\nproof to leave it: " + strings.Join(fields, "; "))
	} else {
		b.WriteString("\nproof to leave it: none (an empty object)")
	}
	if len(p.Evidence) > 0 {
		b.WriteString("\nevidence the daemon must see in it: " + strings.Join(p.Evidence, ", "))
	}
	if len(p.Missing) > 0 {
		b.WriteString("\nnot observed yet: " + strings.Join(p.Missing, ", "))
	}
	return b.String()
}
