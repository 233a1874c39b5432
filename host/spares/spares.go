package spares

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// DefaultIdle is how long a backend may go without a run before its warm
// spares are stopped.
const DefaultIdle = 5 * time.Minute

// DefaultCounts keeps one warm spare for every backend in use.
var DefaultCounts = Counts{Default: 1}

// Counts is how many warm spare processes the supervisor keeps ready for
// each backend in use: Default, or the backend's own count. 0 disables
// them (every run starts its process cold).
type Counts struct {
	Default  int
	Backends map[string]int
}

// For is the pool size of one backend.
func (s Counts) For(backendName string) int {
	if n, ok := s.Backends[backendName]; ok {
		return n
	}
	return s.Default
}

// maxSpares bounds a pool: each spare is a live process.
const maxSpares = 16

// Parse reads the --spares setting: a count for every backend ("1"),
// counts per backend ("sdk=0,mock=2"), or both ("2,sdk=0").
func Parse(text string) (Counts, error) {
	s := Counts{Default: DefaultCounts.Default}
	for part := range strings.SplitSeq(text, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, count, per := strings.Cut(part, "=")
		if !per {
			name, count = "", part
		}
		n, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil || n < 0 || n > maxSpares {
			return Counts{}, api.Errorf(api.CodeInvalid, "--spares %q: %q is not a count from 0 to %d: write N, or backend=N, comma-separated (e.g. 1,sdk=0)", text, strings.TrimSpace(count), maxSpares)
		}
		if !per {
			s.Default = n
			continue
		}
		name = strings.TrimSpace(name)
		if err := api.ValidateScopeName("backend", name); err != nil {
			return Counts{}, api.Errorf(api.CodeInvalid, "--spares %q: %w", text, err)
		}
		if s.Backends == nil {
			s.Backends = map[string]int{}
		}
		s.Backends[name] = n
	}
	return s, nil
}

// String is the setting as Parse reads it.
func (s Counts) String() string {
	parts := []string{strconv.Itoa(s.Default)}
	for _, name := range slices.Sorted(maps.Keys(s.Backends)) {
		parts = append(parts, name+"="+strconv.Itoa(s.Backends[name]))
	}
	return strings.Join(parts, ",")
}
