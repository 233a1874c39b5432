package workflow

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWidens: which edits of a workflow file let its runs do more (held
// for the owner by the daemon's hot reload) and which do not (applied at
// once), each reason as the owner reads it.
func TestWidens(t *testing.T) {
	t.Parallel()
	const base = "agents:\n  a:\n    backend: mock\n"
	tests := map[string]struct {
		old, new string // appended to base, or instead of it when it starts with "agents:"
		want     func(dir string) []string
	}{
		"no change":                {"", "", nil},
		"prompt and schedule only": {"", "    system_prompt: be brief\n    schedule: 5m\n", nil},
		"sandbox mode off": {"", "    sandbox: {mode: off}\n", func(string) []string {
			return []string{"agent a: sandbox mode off: its runs are not confined"}
		}},
		"sandbox mode back on narrows": {"    sandbox: {mode: off}\n", "    sandbox: {mode: on}\n", nil},
		"write path added": {"    sandbox: {write: [out]}\n", "    sandbox: {write: [out, /opt/bin]}\n", func(string) []string {
			return []string{"agent a: sandbox write adds /opt/bin"}
		}},
		"write path removed narrows": {"    sandbox: {write: [out, /srv]}\n", "    sandbox: {write: [out]}\n", nil},
		"read path added": {"", "    sandbox: {read: [data]}\n", func(dir string) []string {
			return []string{"agent a: sandbox read adds " + filepath.Join(dir, "data")}
		}},
		"read of a path it wrote": {"    sandbox: {write: [data]}\n", "    sandbox: {read: [data]}\n", nil},
		"network all": {"    sandbox: {network: [443]}\n", "    sandbox: {network: all}\n", func(string) []string {
			return []string{"agent a: sandbox network all"}
		}},
		"network port added": {"    sandbox: {network: [443]}\n", "    sandbox: {network: [443, 22]}\n", func(string) []string {
			return []string{"agent a: sandbox network adds port 22"}
		}},
		"network all to ports narrows": {"    sandbox: {network: all}\n", "    sandbox: {network: [443]}\n", nil},
		"network none narrows":         {"    sandbox: {network: [443]}\n", "    sandbox: {network: none}\n", nil},
		"backend changed": {"", "agents:\n  a:\n    backend: claude\n", func(string) []string {
			return []string{"agent a: backend claude (was mock)"}
		}},
		"cli binary changed": {"    config: {cli: claude}\n", "    config: {cli: /tmp/x/claude}\n", func(string) []string {
			return []string{"agent a: config cli /tmp/x/claude (was claude)"}
		}},
		"a CLI's own permissions": {"    config: {allowed_tools: [Read]}\n", "    config: {allowed_tools: [Read, Bash], sandbox_mode: danger-full-access}\n", func(string) []string {
			return []string{`agent a: config allowed_tools ["Read","Bash"] (was ["Read"])`, `agent a: config sandbox_mode "danger-full-access" (was the default)`}
		}},
		"a CLI's permission back to its default": {"    config: {sandbox_mode: read-only}\n", "", func(string) []string {
			return []string{`agent a: config sandbox_mode: the backend's default (was "read-only")`}
		}},
		"other config is not policy": {"    config: {script: [{reply: hi}]}\n", "    config: {script: [{reply: bye}]}\n", nil},
		"env added and changed": {"    env: {A: '1'}\n", "    env: {A: '2', B: '3'}\n", func(string) []string {
			return []string{"agent a: env A changes", "agent a: env adds B"}
		}},
		"env removed narrows": {"    env: {A: '1'}\n", "", nil},
		"mcp server added": {"", "    mcp_servers: {fs: {command: npx, args: [server]}}\n", func(string) []string {
			return []string{"agent a: mcp_servers fs: npx server"}
		}},
		"provider changed": {"", "    provider: {name: x, base_url: 'http://evil:22/v1', api_key_env: K}\n", func(string) []string {
			return []string{"agent a: provider base_url http://evil:22/v1 (was the default)"}
		}},
		"tools widened to all": {"    tools: [read]\n", "", func(string) []string {
			return []string{"agent a: tools: all (was read)"}
		}},
		"tool added": {"    tools: [read]\n", "    tools: [read, shell]\n", func(string) []string {
			return []string{"agent a: tools adds shell"}
		}},
		"tools narrowed": {"", "    tools: [read]\n", nil},
		"approval gate dropped": {"    approvals: {integrate: true, shell: ['git push*'], tools: [team_doc_write]}\n", "    approvals: {integrate: true}\n",
			func(string) []string {
				return []string{`agent a: approvals: shell "git push*" no longer waits for a person`, "agent a: approvals: tool team_doc_write no longer waits for a person"}
			}},
		"workflow approvals dropped": {"approvals: {spawn: true}\n", "", func(string) []string {
			return []string{"agent a: approvals: spawn no longer waits for a person"}
		}},
		"approval added narrows":  {"", "    approvals: {integrate: true}\n", nil},
		"approval timeout change": {"    approvals: {integrate: true}\n    approval_timeout: 5m\n", "    approvals: {integrate: true}\n    approval_timeout: 1h\n", nil},
		"can_spawn": {"", "    can_spawn: true\n", func(string) []string {
			return []string{"agent a: can_spawn: true (up to 5 agents)"}
		}},
		"budget lifted and raised": {"    budget: {usd: 1, runs: 5, hard: true}\n", "    budget: {usd: 2}\n", func(string) []string {
			return []string{"agent a: budget: usd 2 (was 1)", "agent a: budget: runs unlimited (was 5)", "agent a: budget: no longer hard: a run in flight may finish past it"}
		}},
		"workflow budget removed": {"budget: {runs: 3}\n", "", func(string) []string {
			return []string{"the workflow's budget: removed"}
		}},
		"run limits raised": {"    max_steps: 10\n    timeout: 5m\n", "    max_steps: 20\n", func(string) []string {
			return []string{"agent a: max_steps 20 (was 10)", "agent a: timeout the default (was 5m0s)"}
		}},
		"run limits lowered narrow": {"    max_steps: 10\n    timeout: 5m\n", "    max_steps: 5\n    timeout: 1m\n", nil},
		"budget lowered narrows":    {"    budget: {usd: 2}\n", "    budget: {usd: 1}\n", nil},
		"loop guard off": {"loop_guard: {max_rounds: 10}\n", "loop_guard: {max_rounds: 0}\n", func(string) []string {
			return []string{"loop_guard: max_rounds 0 (off) (was 10)"}
		}},
		"notify webhook added": {"", "notify: [{webhook: 'https://hooks.example/x', events: [idle]}]\n", func(string) []string {
			return []string{"notify: events go to a new webhook https://hooks.example/x"}
		}},
		"documents moved": {"", "context: {documents: {provider: file, dir: /opt/bin}}\n", func(string) []string {
			return []string{"context: documents dir /opt/bin (was the default): the daemon writes what agents put in documents there"}
		}},
		"documents by a plugin": {"", "context: {documents: evil}\n", func(string) []string {
			return []string{"context: documents provider evil (was the default)"}
		}},
		"new agent asking nothing": {"", "agents:\n  a:\n    backend: mock\n  b:\n    backend: mock\n", nil},
		"new agent unconfined": {"", "agents:\n  a:\n    backend: mock\n  b:\n    backend: mock\n    sandbox: {mode: off}\n", func(string) []string {
			return []string{"agent b: sandbox mode off: its runs are not confined"}
		}},
		"new agent with a new backend": {"", "agents:\n  a:\n    backend: mock\n  b:\n    backend: claude\n", func(string) []string {
			return []string{"agent b: new, with backend claude, which no agent had"}
		}},
		"agent removed narrows": {"agents:\n  a:\n    backend: mock\n  b:\n    backend: mock\n    sandbox: {mode: off}\n", "", nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			parse := func(extra string) Policy {
				src := base + extra // an agent's key, or a top-level one after the agents
				if strings.HasPrefix(extra, "agents:") {
					src = extra
				}
				f, err := Parse(filepath.Join(dir, "wf.yaml"), []byte(src))
				if err != nil {
					t.Fatalf("parse %q: %v", src, err)
				}
				return PolicyOf(f)
			}
			var want []string
			if tc.want != nil {
				want = tc.want(dir)
			}
			if diff := cmp.Diff(want, Widens(parse(tc.old), parse(tc.new))); diff != "" {
				t.Errorf("Widens (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWidensIsNotSymmetric: an edit that widens, undone, narrows.
func TestWidensIsNotSymmetric(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	parse := func(src string) Policy {
		f, err := Parse(filepath.Join(dir, "wf.yaml"), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return PolicyOf(f)
	}
	confined := parse("agents:\n  a:\n    backend: mock\n    sandbox: {write: [out], network: [443]}\n")
	open := parse("agents:\n  a:\n    backend: mock\n    sandbox: {mode: off, write: [out, /], network: all}\n")
	if len(Widens(confined, open)) != 3 {
		t.Errorf("Widens(confined, open) = %q, want the mode, the path and the network", Widens(confined, open))
	}
	if r := Widens(open, confined); r != nil {
		t.Errorf("Widens(open, confined) = %q, want nil: going back narrows", r)
	}
}
