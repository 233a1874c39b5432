package team

import (
	"context"
	"fmt"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

// SendWarnings says why a message just written will not be read soon: its
// workflow is not running, or a recipient is paused, stopped, failed or
// over budget. The message is kept all the same (it waits in the inboxes);
// the warnings go back to whoever sent it (the CLI prints them on stderr,
// the HTTP API and channel_send return them), so "sent" is never a silent
// promise that no run keeps. Nothing to say is nil.
func (s *Service) SendWarnings(ctx context.Context, msg store.Message) []string {
	scope := store.Scope{Workflow: msg.Workflow, Tag: msg.Tag}
	wf, err := s.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	var wfp *store.Workflow
	if err == nil {
		wfp = &wf
	}
	var recipients []store.Agent
	for _, name := range msg.Recipients {
		if name == msg.Sender {
			continue
		}
		a, err := s.db.GetAgent(ctx, store.AgentKey{Name: name, Workflow: scope.Workflow, Tag: scope.Tag})
		if err != nil {
			continue // a member that is not an agent (a human's session)
		}
		recipients = append(recipients, a)
	}
	return sendWarnings(scope, wfp, recipients)
}

// sendWarnings is SendWarnings' rule, apart from the store: wf is the
// message's workflow (nil when it has none, as the global team may not),
// recipients the agents whose inbox got the message. A workflow that is
// not running is the one warning (it holds back every agent of it);
// otherwise each recipient that starts no run says so, with the command
// that lets it run again.
func sendWarnings(scope store.Scope, wf *store.Workflow, recipients []store.Agent) []string {
	display := api.Target{Workflow: scope.Workflow, Tag: scope.Tag}.Display()
	if wf != nil && wf.State != "" && wf.State != api.WorkflowRunning {
		if wf.State.Live() {
			return []string{fmt.Sprintf("workflow %s is %s: the message waits, and none of its agents runs until `agent-worker resume %s`",
				display, wf.State, display)}
		}
		return []string{fmt.Sprintf("workflow %s is %s: the message waits, and none of its agents runs until the workflow is started again: %s",
			display, wf.State, StartCommand(*wf))}
	}
	var out []string
	for _, a := range recipients {
		switch a.State {
		case api.AgentPaused, api.AgentFailed, api.AgentOverBudget, api.AgentStopped:
			who := api.Target{Agent: a.Name, Workflow: a.Workflow, Tag: a.Tag}.Display()
			out = append(out, fmt.Sprintf("%s is %s: the message waits in its inbox, and it starts no run until `agent-worker resume %s`",
				who, a.State, who))
		}
	}
	return out
}

// StartCommand is the command that starts wf again, from the file it was
// started from when the store knows it.
func StartCommand(wf store.Workflow) string {
	start := "agent-worker start <its file>"
	if wf.SourcePath != "" {
		start = "agent-worker start " + wf.SourcePath
	}
	if wf.Tag != "" && wf.Tag != api.DefaultTag {
		start += " --tag " + wf.Tag
	}
	return start
}
