package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// The variables an agent's definition names reach its runs from the
// daemon's environment, and only those (issue 40).
func TestNamedEnv(t *testing.T) {
	daemon := map[string]string{"VLLM_KEY": "from-daemon", "OTHER": "other"}
	getenv := func(k string) string { return daemon[k] }
	vllm := &backend.Provider{Name: "vllm", APIKeyEnv: "VLLM_KEY"}
	for name, tc := range map[string]struct {
		cfg  backend.AgentConfig
		want map[string]string
	}{
		"nothing named":               {backend.AgentConfig{Env: map[string]string{"A": "1"}}, map[string]string{"A": "1"}},
		"no env at all":               {backend.AgentConfig{}, nil},
		"api_key_env from the daemon": {backend.AgentConfig{Provider: vllm}, map[string]string{"VLLM_KEY": "from-daemon"}},
		"env: wins over the daemon": {backend.AgentConfig{Provider: vllm, Env: map[string]string{"VLLM_KEY": "mine"}},
			map[string]string{"VLLM_KEY": "mine"}},
		"beside env:": {backend.AgentConfig{Provider: vllm, Env: map[string]string{"A": "1"}},
			map[string]string{"A": "1", "VLLM_KEY": "from-daemon"}},
		"named but unset": {backend.AgentConfig{Provider: &backend.Provider{Name: "x", APIKeyEnv: "UNSET_KEY"}}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			orig := map[string]string(nil)
			if tc.cfg.Env != nil {
				orig = map[string]string{}
				for k, v := range tc.cfg.Env {
					orig[k] = v
				}
			}
			got := namedEnv(tc.cfg, getenv)
			if diff := cmp.Diff(tc.want, got, cmpNilEmpty); diff != "" {
				t.Errorf("namedEnv (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(orig, tc.cfg.Env, cmpNilEmpty); diff != "" {
				t.Errorf("namedEnv changed the agent's own env (-before +after):\n%s", diff)
			}
		})
	}
}

// cmpNilEmpty takes a nil map and an empty one to be the same.
var cmpNilEmpty = cmp.Comparer(func(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
})
