package catalog

import (
	"os"
	"slices"
	"strings"
)

// EnvNames are the names of the variables of this process's environment
// that its plugins would inherit (Env), set to something non-empty,
// sorted: what doctor reports to say which API keys a run can read. Only
// names: a value never leaves Env.
func EnvNames() []string {
	var names []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if v != "" && InEnv(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
