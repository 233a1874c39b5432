// Package gatehook is what the CLI backends' gate hooks share: a CLI (Claude
// Code, Codex) runs the backend's own plugin binary as a PreToolUse hook
// before each of its tools, `<plugin> gate-hook <gate file>`, and the hook
// asks the daemon's gate whether the call may run. This package holds the
// hook file both CLIs read, the gate file with the daemon's address, the
// hook's input, the question to the daemon (fail-closed, within the hook's
// timeout) and helpers to turn a tool's input into gate calls. Each
// backend keeps its CLI's tool names and its answer format.
package gatehook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/internal/claudehook"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// Arg is the first argument that makes a CLI backend's plugin binary
// answer a PreToolUse hook instead of serving as a plugin.
const Arg = "gate-hook"

// TimeoutSeconds is the timeout the hook file gives the hook; the hook
// gives up on the daemon well before (AskTimeout), since a hook the CLI
// times out does not block the call.
const TimeoutSeconds = 60

// AskTimeout bounds the hook's question to the daemon: a daemon that has
// not answered by then refuses the call.
const AskTimeout = 40 * time.Second

// maxInput bounds what the hook reads from the CLI: a tool's input, which
// holds a file's whole content for a write.
const maxInput = 64 << 20

// Server is the name of the daemon's entry in a gate file.
const Server = "agent-worker"

// HooksFile is the hooks file of a run whose daemon gates its tool calls,
// as Claude Code reads it (--settings) and Codex too (hooks.json): every
// tool, before it runs, asks command.
func HooksFile(command string) ([]byte, error) {
	hook := map[string]any{"type": "command", "command": command, "timeout": TimeoutSeconds}
	return json.MarshalIndent(map[string]any{
		"hooks": map[string]any{
			"PreToolUse": []any{map[string]any{"matcher": "*", "hooks": []any{hook}}},
		},
	}, "", "  ")
}

// Command is the shell command the CLI runs for the gate hook: the plugin
// binary exe in hook mode with the run's gate file.
func Command(exe, gateFile string) string {
	return ShellQuote(exe) + " " + Arg + " " + ShellQuote(gateFile)
}

// ShellQuote quotes s for sh when it holds anything but safe characters.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// entry is the daemon's entry of a gate file: an mcpServers file as Claude
// Code reads it (the token in headers), or one that names the variable
// holding the token instead (Codex's runs keep it out of files).
type entry struct {
	URL         string            `json:"url"`
	Headers     map[string]string `json:"headers,omitempty"`
	BearerToken string            `json:"bearer_token_env_var,omitempty"`
}

// GateFile is a gate file for daemon whose token the hook reads from the
// variable tokenEnv: the file holds only the daemon's address and its
// other headers.
func GateFile(daemon backend.MCPServer, tokenEnv string) ([]byte, error) {
	e := entry{URL: daemon.URL, BearerToken: tokenEnv}
	for k, v := range daemon.Headers {
		if k == "Authorization" && strings.HasPrefix(v, "Bearer ") {
			continue
		}
		if e.Headers == nil {
			e.Headers = map[string]string{}
		}
		e.Headers[k] = v
	}
	return json.MarshalIndent(map[string]any{"mcpServers": map[string]entry{Server: e}}, "", "  ")
}

// Daemon reads the daemon's entry of the gate file at path, the token
// from getenv when the file names its variable.
func Daemon(path string, getenv func(string) string) (backend.MCPServer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return backend.MCPServer{}, err
	}
	var c struct {
		Servers map[string]entry `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return backend.MCPServer{}, fmt.Errorf("%s: %w", path, err)
	}
	s, ok := c.Servers[Server]
	if !ok || s.URL == "" {
		return backend.MCPServer{}, fmt.Errorf("%s names no daemon", path)
	}
	d := backend.MCPServer{Name: Server, URL: s.URL, Headers: s.Headers}
	if s.BearerToken != "" {
		token := getenv(s.BearerToken)
		if token == "" {
			return backend.MCPServer{}, fmt.Errorf("the run's token is not in $%s", s.BearerToken)
		}
		if d.Headers == nil {
			d.Headers = map[string]string{}
		}
		d.Headers["Authorization"] = "Bearer " + token
	}
	return d, nil
}

// Input is the part of a PreToolUse hook's input the gate reads; Claude
// Code and Codex send the same fields (internal/claudehook, which
// `agent-worker hook PreToolUse` reads too).
type Input = claudehook.Input

// Calls maps a hook's input to the calls the gate decides, in the daemon's
// terms; none means the hook lets the call run without asking (the
// daemon's own tools, which it gates itself).
type Calls func(Input) []tools.GateCall

// Decide answers one PreToolUse hook: it reads the hook's input from
// stdin, maps it to gate calls and asks the daemon's gate about each (the
// daemon's address from the gate file args[0], the token from it or from
// getenv). It returns the reason to deny the call, "" to let it run. It
// fails closed: input it cannot read, a gate file without the daemon, a
// daemon that cannot be asked within AskTimeout all deny, saying why.
func Decide(ctx context.Context, args []string, stdin io.Reader, getenv func(string) string, calls Calls) string {
	if len(args) != 1 {
		return refuse("the gate hook was started with %d arguments, not the run's gate file", len(args))
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, maxInput))
	if err != nil {
		return refuse("the gate hook could not read the call (%v)", err)
	}
	var in Input
	if err := json.Unmarshal(raw, &in); err != nil || in.ToolName == "" {
		return refuse("the gate hook could not read the call (%.80q)", raw)
	}
	asks := calls(in)
	if len(asks) == 0 {
		return ""
	}
	daemon, err := Daemon(args[0], getenv)
	if err != nil {
		return refuse("the daemon's gate could not be asked whether %s is allowed now (%v)", in.ToolName, err)
	}
	ctx, cancel := context.WithTimeout(ctx, AskTimeout)
	defer cancel()
	gate := worker.NewGate(daemon)
	for _, c := range asks {
		if d := gate.Gate(ctx, c); !d.Allowed {
			return d.Reason
		}
	}
	return ""
}

// Answer is the PreToolUse answer that denies a call, as Claude Code and
// Codex both read it (claudehook.Deny).
type Answer = claudehook.Deny

// Deny prints the answer that denies a call for reason, marked or not, and
// returns the hook's exit status: 0 once the answer is printed, since the
// CLIs read the JSON only then, else 2, which blocks the call too with
// stderr as the reason.
func Deny(stdout io.Writer, reason string, mark bool) int {
	if err := json.NewEncoder(stdout).Encode(claudehook.NewDeny(reason, mark)); err != nil {
		fmt.Fprintln(os.Stderr, reason)
		return 2
	}
	return 0
}

// refuse is a reason to deny a call the daemon could not decide.
func refuse(format string, a ...any) string {
	return "not run: " + fmt.Sprintf(format, a...) + ", and a call the daemon has not allowed is refused; try again shortly"
}

// Abs is path made absolute against the call's cwd (claudehook.Abs).
func Abs(path, cwd string) string { return claudehook.Abs(path, cwd) }

// Field is the first of keys that the tool's input holds as a non-empty
// string (claudehook.Field).
func Field(input json.RawMessage, keys ...string) string { return claudehook.Field(input, keys...) }

// Refusals is the file where a gate hook notes each call it denied, for
// the plugin to report as gate events when its CLI does not say so on its
// own stream: one JSON string (the reason) a line, beside the gate file.
func Refusals(gateFile string) string {
	return filepath.Join(filepath.Dir(gateFile), "gate-refused.jsonl")
}

// Note appends reason to the refusals file of gateFile.
func Note(gateFile, reason string) error {
	f, err := os.OpenFile(Refusals(gateFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	line, _ := json.Marshal(reason)
	_, err = f.Write(append(line, '\n'))
	return errors.Join(err, f.Close())
}

// Reader reads the refusals file of a run as the hook appends to it.
type Reader struct {
	path string
	off  int64
}

// NewReader reads the refusals noted beside gateFile.
func NewReader(gateFile string) *Reader { return &Reader{path: Refusals(gateFile)} }

// Next returns the reasons noted since the last call: whole lines only, so
// a line the hook is still writing waits for the next call.
func (r *Reader) Next() []string {
	f, err := os.Open(r.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(r.off, io.SeekStart); err != nil {
		return nil
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil
	}
	var reasons []string
	for {
		i := strings.IndexByte(string(b), '\n')
		if i < 0 {
			return reasons
		}
		r.off += int64(i + 1)
		var reason string
		if json.Unmarshal(b[:i], &reason) == nil && reason != "" {
			reasons = append(reasons, reason)
		}
		b = b[i+1:]
	}
}
