package workflow

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// TestLimits: an agent's limits: is read into the config the daemon
// stores, in the units the cgroup takes.
func TestLimits(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		limits string // the agent's limits: value; "" leaves the key out
		want   *backend.RunLimits
	}{
		"absent is nil": {"", nil},
		"null is nil":   {"null", nil},
		"empty":         {"{}", &backend.RunLimits{}},
		"all three":     {"{pids: 256, memory: 512M, cpu: 1.5}", &backend.RunLimits{Pids: 256, Memory: 512 << 20, CPU: 1.5}},
		"units":         {"{memory: 2G}", &backend.RunLimits{Memory: 2 << 30}},
		"fraction":      {"{memory: 1.5G, cpu: 0.25}", &backend.RunLimits{Memory: 3 << 29, CPU: 0.25}},
		"max lifts":     {"{pids: max, memory: max, cpu: max}", &backend.RunLimits{Pids: backend.Unlimited, Memory: backend.Unlimited, CPU: backend.Unlimited}},
		"block style":   {"\n      pids: 64\n      memory: 64MiB", &backend.RunLimits{Pids: 64, Memory: 64 << 20}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := "agents:\n  a:\n    backend: mock\n"
			if tc.limits != "" {
				src += "    limits: " + tc.limits + "\n"
			}
			f, err := Parse("wf.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, f.Agents[0].Limits); diff != "" {
				t.Errorf("Limits (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, f.Agents[0].BackendConfig().Limits); diff != "" {
				t.Errorf("BackendConfig().Limits, what the daemon stores (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLimitsProblems: each mistake is placed and says what to write.
func TestLimitsProblems(t *testing.T) {
	t.Parallel()
	const agent = "agents:\n  a:\n    backend: mock\n"
	tests := map[string]struct{ src, want string }{
		"typo of a key": {agent + "    limits:\n      pid: 64\n",
			`wf.yaml:5:7: unknown key "pid" in limits of agent a: did you mean pids?`},
		"unknown key": {agent + "    limits: {disk: 1G}\n",
			`wf.yaml:4:14: unknown key "disk" in limits of agent a: known keys are pids, memory, cpu`},
		"not a map": {agent + "    limits: 64\n",
			"wf.yaml:4:13: limits must be a map, e.g. limits: {pids: 1024, memory: 2G, cpu: 1.5}"},
		"pids a word": {agent + "    limits: {pids: many}\n",
			`wf.yaml:4:20: pids "many" is not valid: write a whole number of processes and threads, such as 1024, or max`},
		"pids negative": {agent + "    limits: {pids: -5}\n", `wf.yaml:4:20: pids "-5" is not valid`},
		"pids too few": {agent + "    limits: {pids: 4}\n",
			"wf.yaml:4:20: pids 4 is too few: the backend's own process has a dozen threads before the run starts anything; write at least 32"},
		"memory no unit word": {agent + "    limits: {memory: lots}\n",
			`wf.yaml:4:22: memory "lots" is not valid: write a size such as 512M or 2G (K, M, G, T), or max`},
		"memory bad unit": {agent + "    limits: {memory: 5X}\n", `wf.yaml:4:22: memory "5X" is not valid`},
		"memory negative": {agent + "    limits: {memory: -1G}\n", `wf.yaml:4:22: memory "-1G" is not valid`},
		"memory too little": {agent + "    limits: {memory: 1M}\n",
			"wf.yaml:4:22: memory 1M is too little: the backend's own process needs a few tens of MB before the run starts anything; write at least 32M"},
		"cpu a word": {agent + "    limits: {cpu: all}\n",
			`wf.yaml:4:19: cpu "all" is not valid: write a number of cores, such as 2 or 0.5, or max`},
		"cpu zero":     {agent + "    limits: {cpu: 0}\n", `wf.yaml:4:19: cpu "0" is not valid`},
		"cpu too low":  {agent + "    limits: {cpu: 0.001}\n", "wf.yaml:4:19: cpu 0.001 is too little: write at least 0.01 (a hundredth of a core)"},
		"a list value": {agent + "    limits: {pids: [1]}\n", "wf.yaml:4:20: limits pids must be a single value, not a list or map"},
		"in config": {"agents:\n  a: {backend: mock, config: {limits: {pids: 64}}}\n",
			`wf.yaml:2:31: config key "limits" clashes`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("wf.yaml", []byte(tc.src))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v\nwant it to start %q", err, tc.want)
			}
		})
	}
}
