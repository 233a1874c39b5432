package gate

import (
	"context"
	"encoding/json"
	"path/filepath"

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
	}
}

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
