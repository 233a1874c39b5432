package workflow

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// The workflow's approvals: are every agent's that sets none of its own;
// an agent's own replace them whole; they reach the stored configuration
// and read back unchanged.
func TestApprovals(t *testing.T) {
	t.Parallel()
	f, err := Parse("wf.yaml", []byte(`name: team
approvals: {integrate: true, shell: ["git push*"]}
approval_timeout: 10m
agents:
  lead: {backend: mock}
  dev:
    backend: mock
    approvals: {spawn: true, tools: [team_doc_write]}
    approval_timeout: 2s
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*backend.ApprovalPolicy{
		"lead": {Integrate: true, Shell: []string{"git push*"}, Timeout: "10m0s"},
		"dev":  {Spawn: true, Tools: []string{"team_doc_write"}, Timeout: "2s"},
	}
	for _, a := range f.Agents {
		if diff := cmp.Diff(want[a.Name], a.Approvals); diff != "" {
			t.Errorf("%s's approvals (-want +got):\n%s", a.Name, diff)
		}
		c := a.BackendConfig()
		b, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := backend.ParseAgentConfig(b)
		if err != nil || !back.Equal(c) || back.Approvals == nil {
			t.Errorf("%s's config %s reads back as %+v, %v", a.Name, b, back.Approvals, err)
		}
	}
	lead := want["lead"]
	if !lead.Gates("worktree_integrate") || lead.Gates("agent_spawn") || lead.GatesShell("  git push origin main ") != "git push*" || lead.GatesShell("git status") != "" {
		t.Errorf("lead's policy gates the wrong actions")
	}
}

func TestApprovalsProblems(t *testing.T) {
	t.Parallel()
	const agent = "agents:\n  a:\n    backend: mock\n"
	tests := map[string]struct{ src, want string }{
		"unknown key":     {agent + "    approvals: {merge: true}\n", `wf.yaml:4:17: unknown key "merge" in approvals of agent a`},
		"unknown tool":    {agent + "    approvals: {tools: [rm_rf]}\n", `wf.yaml:4:25: approvals tools: "rm_rf" is not a daemon tool: write one of channel_send`},
		"not a map":       {agent + "    approvals: yes\n", "wf.yaml:4:16: approvals must be a map, e.g. approvals: {integrate: true"},
		"shell not list":  {agent + "    approvals: {shell: git push}\n", "wf.yaml:4:24: approvals shell must be a list"},
		"empty pattern":   {agent + "    approvals: {shell: ['']}\n", "wf.yaml:4:25: approvals shell pattern is empty"},
		"bad timeout":     {agent + "    approvals: {spawn: true}\n    approval_timeout: soon\n", `wf.yaml:5:23: approval_timeout "soon" is not a duration above 0`},
		"timeout alone":   {agent + "    approval_timeout: 5m\n", "wf.yaml:4:23: approval_timeout only applies to actions that approvals: gates"},
		"workflow level":  {"approvals: {spawn: maybe}\n" + agent, "wf.yaml:1:20: approvals spawn must be true or false"},
		"in config block": {"agents:\n  a: {backend: mock, config: {approvals: {spawn: true}}}\n", `wf.yaml:2:31: config key "approvals"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("wf.yaml", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error =\n%v\nwant one containing\n%s", err, tc.want)
			}
		})
	}
}

// In a git workspace without checks:, worktree_integrate waits for a
// person by default; integrate: false (the agent's or the workflow's) or
// checks: opt out, and an agent's other approvals keep the default.
func TestIntegrateNeedsApprovalWithoutChecks(t *testing.T) {
	t.Parallel()
	const agents = "agents:\n  lead: {backend: mock}\n  dev: {backend: mock, approvals: {integrate: false}}\n  ops: {backend: mock, approvals: {spawn: true}}\n"
	for name, tc := range map[string]struct {
		src  string
		want map[string]bool // who is gated
	}{
		"no checks":             {"workspace: {git: worktree}\n" + agents, map[string]bool{"lead": true, "ops": true}},
		"checks":                {"workspace: {git: worktree, checks: [\"go test ./...\"]}\n" + agents, map[string]bool{}},
		"workflow opts out":     {"workspace: {git: worktree}\napprovals: {integrate: false}\n" + agents, map[string]bool{"lead": false, "ops": true}},
		"no git workspace":      {agents, map[string]bool{}},
		"workflow gates anyway": {"workspace: {git: worktree, checks: [\"true\"]}\napprovals: {integrate: true}\n" + agents, map[string]bool{"lead": true}},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := Parse("wf.yaml", []byte("name: team\n"+tc.src))
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range f.Agents {
				if got := a.Approvals.Gates("worktree_integrate"); got != tc.want[a.Name] {
					t.Errorf("%s: worktree_integrate gated = %v, want %v", a.Name, got, tc.want[a.Name])
				}
			}
		})
	}
}
