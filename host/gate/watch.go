package gate

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"time"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

// maxPending bounds the tool calls a run's watcher remembers while it
// waits for their results; a backend that never reports results cannot
// make it grow without end.
const maxPending = 256

// Watch returns what turns the events of run runID of k, working in dir,
// into observations of k's active effort as they stream. Only a tool's
// own result counts:
//   - a shell tool's result (run_shell, Bash, shell) whose call carried a
//     command and that reports the command's exit status: a shell
//     observation with it. A backend that does not report one (Claude
//     Code's Bash) gives none: a status the daemon did not see is never
//     assumed;
//   - a write tool's successful result (write_file, edit_file, Write,
//     Edit…): a file observation of its path, resolved against dir;
//   - any tool's successful result: a tool observation of its name.
//
// A file or directory tool's successful result (a read or a write) whose
// path lies in a directory inside the effort's directory not seen before
// adds that directory to the effort (store.AddEffortDirs): the skill's
// directive files there are brought into the agent's next run
// (host/efforts). And every event is a sign of life of the effort: its
// heartbeat moves, at most once per BeatEvery, and a usage event records
// the context the run's model used (its tokens; the window is not known).
//
// A call refused by the gate or failing is no file or tool observation.
// The arguments come from the result's event, or from its call's when
// the result has none (Claude Code's). The returned function is called
// from one goroutine, the run's event loop; it logs its store errors and
// never fails the run.
//
// It also counts the calls of effort_continue and effort_finish the
// events show, for CaughtUp, until Ended.
func (g *Gate) Watch(k store.AgentKey, runID, dir string) func(ctx context.Context, e backend.Event) {
	args := map[string]json.RawMessage{} // tool call id → its arguments
	g.calls.watch(runID)
	return func(ctx context.Context, e backend.Event) {
		g.beat(ctx, k, runID, e)
		if e.Tool == nil {
			return
		}
		switch e.Kind {
		case backend.EventToolCall:
			g.calls.shown(runID, e.Tool.Name)
			if e.Tool.ID != "" && len(e.Tool.Args) > 0 && len(args) < maxPending {
				args[e.Tool.ID] = e.Tool.Args
			}
			return
		case backend.EventToolResult:
		default:
			return
		}
		call := *e.Tool
		if len(call.Args) == 0 {
			call.Args = args[call.ID]
		}
		delete(args, call.ID)
		for _, o := range observations(call, dir) {
			if err := g.Observe(ctx, k, runID, o); err != nil {
				g.log.Warn("record an observation", "run", runID, "agent", k.String(), "kind", o.Kind, "error", err)
			}
		}
		if d := touchedDir(call, dir); d != "" {
			if err := g.touch(ctx, k, d); err != nil {
				g.log.Warn("record a directory the effort touched", "run", runID, "agent", k.String(), "dir", d, "error", err)
			}
		}
	}
}

// BeatEvery is the least time between two heartbeats of an effort that
// Watch writes: each is a store write, and `efforts` shows them to the
// second.
const BeatEvery = 5 * time.Second

// beat moves the heartbeat of k's active effort for an event of its run:
// at most once per beatEvery, and on every usage event, which also
// records the context its model used (the last call's input and output
// tokens). An ended effort takes no heartbeat; that is no error.
func (g *Gate) beat(ctx context.Context, k store.AgentKey, runID string, e backend.Event) {
	var use *store.ContextUse
	if e.Kind == backend.EventUsage && e.Usage != nil {
		use = &store.ContextUse{Tokens: e.Usage.InputTokens + e.Usage.OutputTokens}
	}
	now := g.now()
	g.mu.Lock()
	last, seen := g.beats[k]
	due := use != nil || !seen || now.Sub(last) >= g.beatEvery
	if due {
		if len(g.beats) >= maxCached {
			clear(g.beats)
		}
		g.beats[k] = now
	}
	g.mu.Unlock()
	if !due {
		return
	}
	eff, found, err := g.db.ActiveEffort(ctx, k)
	if err == nil && found {
		err = g.db.HeartbeatEffort(ctx, eff.ID, now, use)
	}
	if err != nil && contract.ErrorCode(err) != contract.CodeConflict {
		g.log.Warn("record an effort's heartbeat", "run", runID, "agent", k.String(), "error", err)
	}
}

// touch adds dir, touched by k's run, to k's active effort when it lies
// inside the effort's directory and is new to it; the effort's directory
// itself is always its own.
func (g *Gate) touch(ctx context.Context, k store.AgentKey, dir string) error {
	e, found, err := g.db.ActiveEffort(ctx, k)
	if err != nil || !found {
		return err
	}
	ps, err := g.skillOf(e)
	if err != nil {
		return err
	}
	rel, ok := ps.rel(dir)
	if !ok || rel == "." {
		return nil
	}
	abs := filepath.Join(e.Dir, filepath.FromSlash(rel))
	g.mu.Lock()
	known := ps.touched[abs]
	g.mu.Unlock()
	if known {
		return nil
	}
	_, err = g.db.AddEffortDirs(ctx, e.ID, abs)
	if contract.ErrorCode(err) == contract.CodeConflict {
		return nil // ended meanwhile
	}
	if err == nil {
		g.mu.Lock()
		ps.touched[abs] = true
		g.mu.Unlock()
	}
	return err
}

// touchedDir is the directory a successful file or directory tool's call
// reached ("" for none): a file's own directory, or the directory a
// listing or search named; relative paths are resolved against dir.
func touchedDir(call backend.ToolCall, dir string) string {
	if call.IsError {
		return ""
	}
	name := skill.ToolName(call.Name)
	file, listing := slices.Contains(fileTools, name) || isWriteTool(name), slices.Contains(dirTools, name)
	if !file && !listing {
		return ""
	}
	var a struct {
		Path         string `json:"path"`
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
	}
	_ = json.Unmarshal(call.Args, &a)
	p := cmpOr(a.FilePath, cmpOr(a.NotebookPath, a.Path))
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		if dir == "" {
			return ""
		}
		p = filepath.Join(dir, p)
	}
	if file {
		return filepath.Dir(p)
	}
	return filepath.Clean(p)
}

// fileTools read the file their call names (writes are writeTools);
// dirTools list or search the directory theirs names: the sdk
// backend's, Claude Code's, Cursor's.
var (
	fileTools = []string{"read_file", "Read", "read", "NotebookRead"}
	dirTools  = []string{"list_files", "search_files", "LS", "Glob", "Grep", "ls", "glob", "grep"}
)

// observations are what a tool result shows was done.
func observations(call backend.ToolCall, dir string) []Observation {
	var a struct {
		Command  string `json:"command"`
		Path     string `json:"path"`
		FilePath string `json:"file_path"` // Claude Code's Write and Edit
	}
	_ = json.Unmarshal(call.Args, &a)
	var out []Observation
	if skill.IsShellTool(call.Name) && a.Command != "" && call.Exit != nil {
		out = append(out, Observation{Kind: store.ObservedShell, Subject: a.Command, Exit: call.Exit})
	}
	if call.IsError {
		return out
	}
	if p := cmpOr(a.Path, a.FilePath); p != "" && isWriteTool(call.Name) {
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		out = append(out, Observation{Kind: store.ObservedFile, Subject: p})
	}
	if call.Name != "" {
		out = append(out, Observation{Kind: store.ObservedTool, Subject: call.Name})
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
