package backend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// RunLimits is an agent's `limits:` (or the daemon's --run-limits): what
// one run may use, its plugin process and everything it starts counted
// together. The daemon writes them to the run's cgroup. A zero field is
// not set (the daemon's default applies); Unlimited lifts a limit.
type RunLimits struct {
	// Pids caps the tasks alive at once: processes and their threads
	// (a cgroup's pids.max counts threads).
	Pids int64
	// Memory caps the bytes of memory charged to the run (its processes'
	// memory, page cache and kernel memory); past it the kernel kills a
	// process of the run.
	Memory int64
	// CPU caps the CPU time, in cores: 1.5 is one and a half CPUs' worth.
	CPU float64
}

// Unlimited as a limit's value lifts it ("max").
const Unlimited = -1

// The smallest limits a run can start under: the backend's own plugin
// process has a dozen threads and a few tens of MB before its run starts
// anything.
const (
	MinPids   = 32
	MinMemory = 32 << 20
	MinCPU    = 0.01 // cpu.max takes at least 1 ms per 100 ms
)

// limitsExample is a whole limits:, for messages that show what to write.
const limitsExample = "limits: {pids: 1024, memory: 2G, cpu: 1.5}"

// LimitKeys are the keys of limits:.
var LimitKeys = []string{"pids", "memory", "cpu"}

// IsZero reports limits with nothing set.
func (l RunLimits) IsZero() bool { return l == RunLimits{} }

// Over is l with the fields it leaves unset taken from def.
func (l RunLimits) Over(def RunLimits) RunLimits {
	if l.Pids == 0 {
		l.Pids = def.Pids
	}
	if l.Memory == 0 {
		l.Memory = def.Memory
	}
	if l.CPU == 0 {
		l.CPU = def.CPU
	}
	return l
}

// String is the limits as status shows them: "pids 1024, memory 2G,
// cpu max"; an unset field is left out.
func (l RunLimits) String() string {
	var parts []string
	if l.Pids != 0 {
		parts = append(parts, "pids "+FormatPids(l.Pids))
	}
	if l.Memory != 0 {
		parts = append(parts, "memory "+FormatMemory(l.Memory))
	}
	if l.CPU != 0 {
		parts = append(parts, "cpu "+FormatCPU(l.CPU))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// ParsePids reads a pids limit: a whole number of tasks, or max.
func ParsePids(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return Unlimited, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("pids %q is not valid: write a whole number of processes and threads, such as 1024, or max", s)
	}
	if n < MinPids {
		return 0, fmt.Errorf("pids %d is too few: the backend's own process has a dozen threads before the run starts anything; write at least %d", n, MinPids)
	}
	return n, nil
}

// FormatPids writes a pids limit as ParsePids reads it.
func FormatPids(n int64) string {
	if n < 0 {
		return "max"
	}
	return strconv.FormatInt(n, 10)
}

// memoryUnits are the suffixes of a memory size, in powers of 1024.
var memoryUnits = []struct {
	suffix string
	shift  uint
}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}}

// ParseMemory reads a memory limit: a size such as 512M, 2G or 1.5G
// (K, M, G, T are powers of 1024; KB, MiB and the like are read the same),
// a number of bytes, or max.
func ParseMemory(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return Unlimited, nil
	}
	bad := fmt.Errorf("memory %q is not valid: write a size such as 512M or 2G (K, M, G, T), or max", s)
	num, shift := strings.ToUpper(s), uint(0)
	num = strings.TrimSuffix(strings.TrimSuffix(num, "B"), "I")
	for _, u := range memoryUnits {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, shift = rest, u.shift
			break
		}
	}
	if num == "" || strings.ContainsAny(num, "+-eE_ ") {
		return 0, bad
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) {
		return 0, bad
	}
	b := f * float64(uint64(1)<<shift)
	if b >= math.MaxInt64/2 {
		return 0, fmt.Errorf("memory %q is too large: write max for no limit", s)
	}
	n := int64(b)
	if n < MinMemory {
		return 0, fmt.Errorf("memory %s is too little: the backend's own process needs a few tens of MB before the run starts anything; write at least 32M", s)
	}
	return n, nil
}

// FormatMemory writes a memory limit in the largest unit that holds it
// whole: 536870912 is 512M.
func FormatMemory(n int64) string {
	if n < 0 {
		return "max"
	}
	for _, u := range memoryUnits {
		if n > 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseCPU reads a CPU limit in cores (1.5 is one and a half CPUs' time),
// or max.
func ParseCPU(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return Unlimited, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 || strings.ContainsAny(s, "eE") {
		return 0, fmt.Errorf("cpu %q is not valid: write a number of cores, such as 2 or 0.5, or max", s)
	}
	if f < MinCPU {
		return 0, fmt.Errorf("cpu %s is too little: write at least %g (a hundredth of a core)", s, MinCPU)
	}
	if f > 1<<20 {
		return 0, fmt.Errorf("cpu %s is too many cores: write max for no limit", s)
	}
	return f, nil
}

// FormatCPU writes a CPU limit as ParseCPU reads it.
func FormatCPU(f float64) string {
	if f < 0 {
		return "max"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// CPUMax is a CPU limit as cgroup v2's cpu.max takes it: the quota and
// the period in µs ("150000 100000" for 1.5 cores), or "max 100000".
func CPUMax(cores float64) string {
	if cores <= 0 {
		return "max 100000"
	}
	return strconv.FormatInt(int64(math.Round(cores*100000)), 10) + " 100000"
}

// ParseRunLimits reads limits written as a flag: pids=1024,memory=2G,cpu=1.5
// (any of them, in any order; each value as in limits:).
func ParseRunLimits(s string) (RunLimits, error) {
	var l RunLimits
	var errs []error
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, value, ok := strings.Cut(part, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not key=value: write e.g. pids=1024,memory=2G,cpu=1.5", part))
			continue
		}
		if err := l.set(strings.TrimSpace(key), value); err != nil {
			errs = append(errs, err)
		}
	}
	return l, errors.Join(errs...)
}

// set reads one key of limits.
func (l *RunLimits) set(key, value string) (err error) {
	switch key {
	case "pids":
		l.Pids, err = ParsePids(value)
	case "memory":
		l.Memory, err = ParseMemory(value)
	case "cpu":
		l.CPU, err = ParseCPU(value)
	default:
		err = fmt.Errorf("unknown limit %q: the limits are pids, memory and cpu, e.g. %s", key, limitsExample)
	}
	return err
}

// SetLimit reads one key of limits: (pids, memory or cpu) from its value
// as written, for a parser that reports its own positions.
func (l *RunLimits) SetLimit(key, value string) error { return l.set(key, value) }

// MarshalJSON writes {"pids": 1024, "memory": "2G", "cpu": 1.5}, each
// limit left out when unset and "max" when lifted.
func (l RunLimits) MarshalJSON() ([]byte, error) {
	obj := map[string]any{}
	if l.Pids != 0 {
		obj["pids"] = json.RawMessage(FormatPids(l.Pids))
		if l.Pids < 0 {
			obj["pids"] = "max"
		}
	}
	if l.Memory != 0 {
		obj["memory"] = FormatMemory(l.Memory)
	}
	if l.CPU != 0 {
		obj["cpu"] = json.RawMessage(FormatCPU(l.CPU))
		if l.CPU < 0 {
			obj["cpu"] = "max"
		}
	}
	return json.Marshal(obj)
}

// UnmarshalJSON reads what MarshalJSON writes; a number or a string is
// taken for each limit, as in a workflow file.
func (l *RunLimits) UnmarshalJSON(b []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return fmt.Errorf("config limits: write an object such as %s", limitsExample)
	}
	out := RunLimits{}
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		raw := obj[key]
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(bytes.TrimSpace(raw))
		}
		if err := out.set(key, s); err != nil {
			errs = append(errs, fmt.Errorf("config limits: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	*l = out
	return nil
}
