package team

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/store"
)

func TestSendWarnings(t *testing.T) {
	t.Parallel()
	crew := store.Scope{Workflow: "crew", Tag: api.DefaultTag}
	agent := func(name string, s api.AgentState) store.Agent {
		return store.Agent{Name: name, Workflow: "crew", Tag: api.DefaultTag, State: s}
	}
	wf := func(s api.WorkflowState, tag string) *store.Workflow {
		return &store.Workflow{Name: "crew", Tag: tag, State: s, SourcePath: "/home/me/crew.yaml"}
	}
	tests := map[string]struct {
		scope      store.Scope
		wf         *store.Workflow
		recipients []store.Agent
		want       []string
	}{
		"running, idle recipient":               {crew, wf(api.WorkflowRunning, api.DefaultTag), []store.Agent{agent("alice", api.AgentIdle)}, nil},
		"new workflow (empty state) is running": {crew, wf("", api.DefaultTag), []store.Agent{agent("alice", api.AgentRunning)}, nil},
		"no workflow row, no recipients":        {crew, nil, nil, nil},
		"stopped workflow says how to start it": {crew, wf(api.WorkflowStopped, api.DefaultTag), []store.Agent{agent("alice", api.AgentStopped)}, []string{
			"workflow @crew is stopped: the message waits, and none of its agents runs until the workflow is started again: agent-worker start /home/me/crew.yaml",
		}},
		"stopped tagged workflow names its tag": {store.Scope{Workflow: "crew", Tag: "pr7"}, wf(api.WorkflowStopped, "pr7"), nil, []string{
			"workflow @crew:pr7 is stopped: the message waits, and none of its agents runs until the workflow is started again: agent-worker start /home/me/crew.yaml --tag pr7",
		}},
		"paused workflow is resumed": {crew, wf(api.WorkflowPaused, api.DefaultTag), []store.Agent{agent("alice", api.AgentIdle)}, []string{
			"workflow @crew is paused: the message waits, and none of its agents runs until `agent-worker resume @crew`",
		}},
		"each held recipient, not the idle one": {crew, wf(api.WorkflowRunning, api.DefaultTag), []store.Agent{
			agent("alice", api.AgentPaused), agent("bob", api.AgentIdle), agent("carol", api.AgentOverBudget),
		}, []string{
			"alice@crew is paused: the message waits in its inbox, and it starts no run until `agent-worker resume alice@crew`",
			"carol@crew is over_budget: the message waits in its inbox, and it starts no run until `agent-worker resume carol@crew`",
		}},
		"global agent shown by its name": {store.Scope{Workflow: api.GlobalWorkflow, Tag: api.DefaultTag}, nil,
			[]store.Agent{{Name: "alice", Workflow: api.GlobalWorkflow, Tag: api.DefaultTag, State: api.AgentStopped}}, []string{
				"alice is stopped: the message waits in its inbox, and it starts no run until `agent-worker resume alice`",
			}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := sendWarnings(tt.scope, tt.wf, tt.recipients)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("sendWarnings (-want +got):\n%s", diff)
			}
		})
	}
}
