package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
)

// addQuestionTools registers ask_user: a question for the owner, answered
// later as a message that wakes the agent.
func (s *Server) addQuestionTools(srv *mcp.Server, me store.AgentKey) {
	tool(s, srv, me, tools.AskUser,
		fmt.Sprintf("Ask the owner (a person) a question you cannot settle with your team: a decision, a missing fact, a permission. "+
			"It returns the question's id at once; the owner is told, and the answer comes later as a message that mentions you, which wakes you. "+
			"Don't wait for it: end your run unless you have other work. Give options when the answer is one of a few (at most %d), and context the owner needs (at most %d characters of question).",
			store.MaxQuestionOptions, store.MaxQuestionLen),
		func(ctx context.Context, in tools.AskUserArgs) (tools.Question, string, error) {
			q, err := s.svc.Ask(ctx, team.AskRequest{Agent: me, RunID: runOf(ctx), Question: in.Question, Options: in.Options, Context: in.Context})
			if err != nil {
				return tools.Question{}, "", err
			}
			return team.APIQuestion(q), fmt.Sprintf("asked the owner as %s; the answer will reach your inbox as a message from user that mentions you", q.ID), nil
		})
}
