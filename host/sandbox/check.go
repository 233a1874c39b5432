package sandbox

import (
	"slices"

	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
)

// Check is the policy of a merge queue check (host/worktrees) run in the
// scratch worktree dir with the private temporary directory tmp; ok is
// false when checks run unconfined, as runs do then. A check runs code
// from the agents' branches, so it gets what a run's shell tool gets and
// less: the system read-only, dir and tmp read-write, the worktree's own
// git admin directory (its index) read-write, the rest of the repository's
// git directory read-only (a check may read history, never move a ref),
// and no network.
func (s *Sandbox) Check(dir, tmp string) (p sb.Policy, ok bool) {
	if !s.Enforcing() {
		return sb.Policy{}, false
	}
	p.Read = slices.Clone(s.system)
	p.Write = append(slices.Clone(s.devices), dir, tmp)
	rw, ro := gitDirs(dir)
	if len(rw) > 0 {
		p.Write = append(p.Write, rw[0]) // the worktree's admin directory; objects, refs and logs stay read-only
	}
	p.Read = append(p.Read, ro...)
	return tidy(p), true
}
