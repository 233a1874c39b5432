package sandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A spare's base layer can serve a run only if it grants everything the
// run's policy does: Landlock layers only take access away.
func TestWithin(t *testing.T) {
	t.Parallel()
	base := Policy{Read: []string{"/usr", "/etc"}, Write: []string{"/home/aw/runs", "/work/team"}, Net: Net{Ports: []uint16{443, 5099}}}
	tests := map[string]struct {
		run  Policy
		want bool
	}{
		"the same":                      {base, true},
		"narrower paths":                {Policy{Read: []string{"/usr/lib"}, Write: []string{"/home/aw/runs/run_1"}, Net: Net{Ports: []uint16{5099}}}, true},
		"a read beneath a write":        {Policy{Read: []string{"/work/team/docs"}}, true},
		"a write beneath a read":        {Policy{Write: []string{"/usr/local"}}, false},
		"a path outside":                {Policy{Read: []string{"/home/user/.ssh"}}, false},
		"a sibling with a shared start": {Policy{Write: []string{"/work/team-other"}}, false},
		"a port more":                   {Policy{Net: Net{Ports: []uint16{8080}}}, false},
		"all network over ports":        {Policy{Net: Net{All: true}}, false},
		"tool ports over none":          {Policy{ToolNet: Net{Ports: []uint16{443}}}, false},
	}
	for name, tc := range tests {
		if got := tc.run.Within(base); got != tc.want {
			t.Errorf("%s: Within = %v, want %v", name, got, tc.want)
		}
	}
	if !(Policy{Net: Net{All: true}}).Within(Policy{Net: Net{All: true}, ToolNet: Net{All: true}}) {
		t.Error("a run with all network does not fit a base with all network")
	}
}

// Explain names what the sandbox refused, and only that: a path or port
// the policy grants, or a line without a refusal, yields nothing.
func TestExplain(t *testing.T) {
	t.Parallel()
	p := Policy{Read: []string{"/usr", "/repo/.git"}, Write: []string{"/work"}, Net: Net{Ports: []uint16{5099}}, ToolNet: Net{Ports: []uint16{8080}}}
	tests := map[string]struct {
		tool   bool
		output string
		want   []string
	}{
		"a read outside": {output: "cat: /home/aw/daemon.json: Permission denied\n",
			want: []string{"/home/aw/daemon.json is outside the agent's sandbox (not readable)"}},
		"a relative read": {output: "cat: ../../other/secret.txt: Permission denied\n",
			want: []string{"/other/secret.txt is outside the agent's sandbox (not readable)"}},
		"a write to a read-only path": {output: "sh: 1: cannot create /repo/.git/config: Permission denied\n",
			want: []string{"/repo/.git/config is outside the agent's sandbox (read-only)"}},
		"a write through the shell by its path": {output: "/bin/sh: 1: cannot create /usr/agent-worker.conf: Permission denied\n/bin/bash: line 3: /etc/x: Permission denied\n",
			want: []string{"/usr/agent-worker.conf is outside the agent's sandbox (read-only)", "/etc/x is outside the agent's sandbox (not readable)"}},
		"a refused port of a tool": {tool: true, output: "bash: line 1: /dev/tcp/127.0.0.1/5099: Permission denied\n",
			want: []string{"TCP port 5099 is outside the agent's sandbox (network: tcp 8080)"}},
		"a granted port of a tool":   {tool: true, output: "curl: (7) Failed to connect to 127.0.0.1 port 8080: Permission denied\n"},
		"the plugin's own port":      {output: "dial tcp 127.0.0.1:5099: connect: permission denied\n"},
		"a refused port of a plugin": {output: "dial tcp 10.0.0.1:5432: connect: permission denied\n", want: []string{"TCP port 5432 is outside the agent's sandbox (network: tcp 5099)"}},
		"a UDP datagram":             {tool: true, output: "bash: line 1: /dev/udp/127.0.0.1/53: Permission denied\n", want: []string{"UDP port 53 is outside the agent's sandbox (network: tcp 8080)"}},
		"a granted path":             {output: "cat: /work/x: Permission denied\n"},
		"no refusal":                 {output: "cat: /home/aw/daemon.json: No such file or directory\n"},
		"the same twice": {output: "cat: /etc/../home/x: Permission denied\ncat: /home/x: Permission denied\n",
			want: []string{"/home/x is outside the agent's sandbox (not readable)"}},
	}
	for name, tc := range tests {
		got := Explain(p, tc.tool, "/work/agent", tc.output)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: Explain (-want +got):\n%s", name, diff)
		}
	}
}

// A policy from the wire must mean what it says.
func TestValidate(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]Policy{
		"relative": {Read: []string{"usr"}}, "unclean": {Write: []string{"/work/../etc"}}, "port 0": {Net: Net{Ports: []uint16{0}}},
	} {
		if p.Validate() == nil {
			t.Errorf("%s: Validate accepted %+v", name, p)
		}
	}
	if err := (Policy{Read: []string{"/usr"}, Net: Net{Ports: []uint16{443}}}).Validate(); err != nil {
		t.Errorf("a good policy: %v", err)
	}
}
