package gate

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

// maxCached bounds the parsed skills kept; past it the cache starts
// again (an effort's entry is rebuilt from its row on its next call).
const maxCached = 512

// Gate decides an agent's tool calls by the phase of its active effort
// and records what its runs were seen doing.
type Gate struct {
	db  *store.DB
	log hclog.Logger

	// beatEvery is the least time between two heartbeats of one agent's
	// effort (BeatEvery; tests shorten it); now is the clock.
	beatEvery time.Duration
	now       func() time.Time

	// mu guards the fields that follow: the parsed skill of each effort
	// seen, by effort id (an effort's snapshot never changes), and the
	// last heartbeat written for each agent.
	mu     sync.Mutex
	parsed map[string]*parsed
	beats  map[store.AgentKey]time.Time
	// unlogged counts, by effort id, the tool calls allowed since the
	// effort's last log entry (the heartbeat gate). It lives here, not in
	// the store: a restart forgets it, which only gives an agent its N
	// calls again, and a tool call stays a read of the store, not a write.
	unlogged map[string]int

	calls catchUp // the effort calls each run's events showed (CaughtUp)
}

// parsed is an effort's skill as parsed from its snapshot, and its
// directory with symbolic links resolved (a plugin resolves the paths it
// is given, so both forms name the effort's files).
type parsed struct {
	skill *skill.Skill
	dirs  []string
	// touched are the directories inside the effort's directory its runs
	// were seen touching and the store has (AddEffortDirs), guarded by
	// Gate.mu.
	touched map[string]bool
}

// New returns the gate over db.
func New(db *store.DB, log hclog.Logger) *Gate {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Gate{db: db, log: log, beatEvery: BeatEvery, now: time.Now, calls: catchUp{wait: catchUpWait},
		parsed: map[string]*parsed{}, beats: map[store.AgentKey]time.Time{}, unlogged: map[string]int{}}
}

// Logged tells the gate that effort id has a new log entry: its heartbeat
// gate counts from zero again (host/efforts calls it on effort log).
func (g *Gate) Logged(id string) {
	g.mu.Lock()
	delete(g.unlogged, id)
	g.mu.Unlock()
}

// Phase is the current phase of k's active effort, parsed, with the
// effort; found is false when k has no active effort.
func (g *Gate) Phase(ctx context.Context, k store.AgentKey) (p *skill.Phase, e store.Effort, found bool, err error) {
	e, found, err = g.db.ActiveEffort(ctx, k)
	if err != nil || !found {
		return nil, e, false, err
	}
	ps, err := g.skillOf(e)
	if err != nil {
		return nil, e, false, err
	}
	p, err = phaseOf(ps.skill, e)
	return p, e, err == nil, err
}

// Decide is the gate's answer to k's call: allowed when k has no active
// effort, when the call writes one of the effort's own artifact files of
// the current phase, or when the phase's tool rules allow it. Before the
// rules comes the heartbeat gate of a phase that has one: after its
// every allowed calls without an effort log entry, every call but the
// effort's own (skill.EffortTools, `agent-worker effort …` in a shell)
// is refused until the agent logs. An error is the daemon not knowing
// (the store down, a snapshot it cannot read); callers refuse the call
// then.
func (g *Gate) Decide(ctx context.Context, k store.AgentKey, call skill.Call) (skill.Decision, error) {
	// Every tool call comes here: read only where the effort is, and the
	// whole effort (its snapshot) only the first time.
	at, found, err := g.db.ActiveEffortPhase(ctx, k)
	if err != nil || !found {
		return skill.Decision{Allowed: err == nil}, err
	}
	e := store.Effort{ID: at.ID, Ordinal: at.Ordinal, Phase: at.Phase, PhaseName: at.PhaseName}
	g.mu.Lock()
	ps := g.parsed[e.ID]
	g.mu.Unlock()
	if ps == nil {
		full, err := g.db.GetEffort(ctx, e.ID)
		if err != nil {
			return skill.Decision{}, err
		}
		if ps, err = g.skillOf(full); err != nil {
			return skill.Decision{}, err
		}
	}
	p, err := phaseOf(ps.skill, e)
	if err != nil {
		return skill.Decision{}, err
	}
	every := p.HeartbeatEvery()
	if every > 0 && !effortCall(call) {
		g.mu.Lock()
		n := g.unlogged[e.ID]
		g.mu.Unlock()
		if n >= every {
			return skill.Decision{Reason: p.HeartbeatReason(n, agentName(k)), Rule: "heartbeat"}, nil
		}
	}
	d := g.check(p, ps, e, call)
	if d.Allowed && every > 0 && !effortCall(call) {
		g.mu.Lock()
		if len(g.unlogged) >= maxCached {
			clear(g.unlogged) // an ended effort's count would stay forever
		}
		g.unlogged[e.ID]++
		g.mu.Unlock()
	}
	return d, nil
}

// check is the phase's answer to call, its own artifact files exempt.
func (g *Gate) check(p *skill.Phase, ps *parsed, e store.Effort, call skill.Call) skill.Decision {
	if call.Path != "" && len(p.Artifacts) > 0 {
		if rel, ok := ps.rel(call.Path); ok {
			for _, kind := range p.Artifacts {
				if rel == skill.ArtifactFile(e.Ordinal, ps.skill.Name, kind) {
					return skill.Decision{Allowed: true}
				}
			}
		}
	}
	return p.Check(call)
}

// effortCall says whether call works the effort itself: one of the effort
// tools, or the CLI's effort commands run in a shell (how a live session
// logs). The heartbeat gate never refuses them, or an agent could not log.
func effortCall(call skill.Call) bool {
	if slices.Contains(skill.EffortTools, skill.ToolName(call.Tool)) {
		return true
	}
	if !skill.IsShellTool(call.Tool) {
		return false
	}
	f := strings.Fields(call.Command)
	return len(f) >= 2 && filepath.Base(f[0]) == "agent-worker" && (f[1] == "effort" || f[1] == "efforts")
}

// agentName is k as the CLI's --agent takes it (its full form).
func agentName(k store.AgentKey) string { return k.String() }

// phaseOf is e's current phase in s: by its index, which the store keeps
// with its name; a snapshot whose phases do not match the row is a
// conflict the daemon cannot decide under.
func phaseOf(s *skill.Skill, e store.Effort) (*skill.Phase, error) {
	if e.Phase < 0 || e.Phase >= len(s.Phases) || s.Phases[e.Phase].Name != e.PhaseName {
		return nil, contract.Errorf(contract.CodeConflict, "effort %s is in phase %d (%s), which its skill %s does not have as such: the snapshot and the effort disagree",
			e.ID, e.Phase+1, e.PhaseName, s.Name)
	}
	return s.Phases[e.Phase], nil
}

// skillOf parses e's snapshot, once per effort.
func (g *Gate) skillOf(e store.Effort) (*parsed, error) {
	g.mu.Lock()
	ps := g.parsed[e.ID]
	g.mu.Unlock()
	if ps != nil {
		return ps, nil
	}
	s, err := skill.FromSnapshot(e.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("effort %s: %w", e.ID, err)
	}
	ps = &parsed{skill: s, dirs: []string{e.Dir}, touched: map[string]bool{}}
	for _, d := range e.Dirs {
		ps.touched[d] = true
	}
	if real, err := filepath.EvalSymlinks(e.Dir); err == nil && real != e.Dir {
		ps.dirs = append(ps.dirs, real)
	}
	g.mu.Lock()
	if len(g.parsed) >= maxCached {
		clear(g.parsed)
	}
	g.parsed[e.ID] = ps
	g.mu.Unlock()
	return ps, nil
}

// rel is path relative to the effort's directory, with / between its
// elements; ok is false for a path outside it. A relative path is taken
// as relative to the directory already.
func (ps *parsed) rel(path string) (string, bool) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(ps.dirs[0], path)
	}
	path = filepath.Clean(path)
	for _, d := range ps.dirs {
		if r, err := filepath.Rel(d, path); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(r), true
		}
	}
	return "", false
}

// An Observation is something a run was seen doing.
type Observation struct {
	Kind store.ObservationKind
	// Subject is a shell command line, a file's path (absolute, or
	// relative to the effort's directory) or a tool's name.
	Subject string
	// Exit is a shell command's exit status; nil when the backend did
	// not report it.
	Exit *int
}

// Observe records o, seen in run runID of k, as an observation of the
// current phase of k's active effort; without one nothing is recorded. A
// file's path is recorded relative to the effort's directory when inside
// it (as evidence globs are written), absolute otherwise; a tool's name
// loses the daemon's MCP prefix. A phase that moved meanwhile (the store's
// conflict) is logged, not an error: the observation belonged to a phase
// that has ended.
func (g *Gate) Observe(ctx context.Context, k store.AgentKey, runID string, o Observation) error {
	e, found, err := g.db.ActiveEffort(ctx, k)
	if err != nil || !found {
		return err
	}
	switch o.Kind {
	case store.ObservedFile:
		ps, err := g.skillOf(e)
		if err != nil {
			return err
		}
		if rel, ok := ps.rel(o.Subject); ok {
			o.Subject = rel
		}
	case store.ObservedTool:
		o.Subject = skill.ToolName(o.Subject)
	}
	_, err = g.db.Observe(ctx, e.ID, e.Phase, o.Kind, o.Subject, o.Exit, runID)
	if contract.ErrorCode(err) == contract.CodeConflict {
		g.log.Debug("observation dropped: the effort's phase moved", "effort", e.ID, "kind", o.Kind, "subject", o.Subject, "error", err)
		return nil
	}
	return err
}

// isWriteTool says whether tool writes the file its call names.
func isWriteTool(tool string) bool {
	return slices.Contains(writeTools, skill.ToolName(tool))
}

// writeTools are the tools whose successful calls write their path: the
// sdk backend's and the mock's, Claude Code's and Cursor's.
var writeTools = []string{"write_file", "edit_file", "Write", "Edit", "MultiEdit", "NotebookEdit", "write", "edit"}

// ObserveTool records that k called tool in run runID ("" for an outside
// agent or a live session): host/mcpserver's evidence of the daemon's own
// tools.
func (g *Gate) ObserveTool(ctx context.Context, k store.AgentKey, runID, tool string) error {
	return g.Observe(ctx, k, runID, Observation{Kind: store.ObservedTool, Subject: tool})
}
