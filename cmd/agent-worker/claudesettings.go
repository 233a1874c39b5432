package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
)

// hookTimeoutSeconds is the timeout `hooks install` gives Claude Code for
// each hook command; the command itself gives up on the daemon well
// before (hook --timeout).
const hookTimeoutSeconds = 10

// hookPreCompact is Claude Code's hook before it compacts the context.
const hookPreCompact = "PreCompact"

// installedEvents are the hook events `hooks install` writes: the team's
// (api.HookEvents), the gate before each tool call and the one before a
// compaction.
var installedEvents = appendNew(append([]string{api.HookPreToolUse}, api.HookEvents...), hookPreCompact)

// matchAll are the events whose groups need a matcher to run for every
// tool.
var matchAll = []string{api.HookPreToolUse, api.HookPostToolUse}

// ourHook recognises a hook command `hooks install` wrote:
// "… hook <Event> --agent <target> …". It is how uninstall and a new
// install find exactly what an install added and nothing of the user's.
var ourHook = regexp.MustCompile(`(?:^|\s)hook (` + strings.Join(installedEvents, "|") + `) --agent (\S+)(?:\s|$)`)

// ourStatusLine recognises the status line command `hooks install` wrote:
// "… statusline --agent <target> …".
var ourStatusLine = regexp.MustCompile(`(?:^|\s)statusline --agent (\S+)(?:\s|$)`)

// statusLineCommand is the status line command Claude Code runs: this
// executable's `statusline` for the agent, with the daemon's home.
func statusLineCommand(exe, home string, t api.Target) string {
	return shellQuote(exe) + " statusline --agent " + t.String() + " --home " + shellQuote(home)
}

// hookCommand is the shell command Claude Code runs for event: this
// executable, with the home it found the daemon in, so the hook reaches
// the same daemon whatever Claude's environment holds.
func hookCommand(exe, home, event string, t api.Target) string {
	return shellQuote(exe) + " hook " + event + " --agent " + t.String() + " --home " + shellQuote(home)
}

// shellQuote quotes s for sh when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// object is a JSON object that keeps its keys in order, so rewriting a
// user's settings file changes only what is added or removed.
type object []field

type field struct {
	Key   string
	Value json.RawMessage
}

func (o *object) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	*o = object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		*o = append(*o, field{tok.(string), v})
	}
	_, err := dec.Token()
	return err
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.Value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o object) get(key string) (json.RawMessage, bool) {
	for _, f := range o {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}

// set replaces key's value where it is, or appends it.
func (o *object) set(key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	for i, f := range *o {
		if f.Key == key {
			(*o)[i].Value = raw
			return nil
		}
	}
	*o = append(*o, field{key, raw})
	return nil
}

func (o *object) del(key string) {
	for i, f := range *o {
		if f.Key == key {
			*o = append((*o)[:i], (*o)[i+1:]...)
			return
		}
	}
}

// claudeSettings is a Claude Code settings file and its "hooks" object.
type claudeSettings struct {
	path  string
	top   object
	hooks object
}

// settingsPath is the file `hooks install` writes for a project directory:
// the local settings, which Claude Code keeps out of version control.
func settingsPath(dir string) string { return filepath.Join(dir, ".claude", "settings.local.json") }

// loadSettings reads path (a missing file is empty settings). A file that
// is not what Claude Code reads is refused, never overwritten.
func loadSettings(path string) (*claudeSettings, error) {
	s := &claudeSettings{path: path, top: object{}, hooks: object{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, err
	case len(bytes.TrimSpace(b)) == 0:
		return s, nil
	}
	if err := json.Unmarshal(b, &s.top); err != nil {
		return nil, fmt.Errorf("%s is not a settings file Claude Code reads (%v): fix it, or give another --dir", path, err)
	}
	if raw, ok := s.top.get("hooks"); ok {
		if err := json.Unmarshal(raw, &s.hooks); err != nil {
			return nil, fmt.Errorf("%s: \"hooks\" is not a JSON object (%v): fix it first", path, err)
		}
	}
	return s, nil
}

// strip removes the hook commands of ours that match (agent-worker hooks
// of the given agent, or of any agent for an empty target) from every
// event, dropping the groups and events left empty, and says how many it
// removed and for which agents.
func (s *claudeSettings) strip(only string) (int, []string, error) {
	n, agents := 0, []string{}
	for i := 0; i < len(s.hooks); i++ {
		f := s.hooks[i]
		var groups []json.RawMessage
		if err := json.Unmarshal(f.Value, &groups); err != nil {
			continue // not a hooks list Claude reads: none of ours
		}
		kept := make([]json.RawMessage, 0, len(groups))
		changed := false
		for _, g := range groups {
			out, removed, who := stripGroup(g, only)
			n += removed
			agents = appendNew(agents, who...)
			changed = changed || removed > 0
			if out != nil {
				kept = append(kept, out)
			}
		}
		switch {
		case !changed:
		case len(kept) == 0:
			s.hooks = append(s.hooks[:i], s.hooks[i+1:]...)
			i--
		default:
			if err := s.hooks.set(f.Key, kept); err != nil {
				return 0, nil, err
			}
		}
	}
	return n, agents, nil
}

// stripGroup removes our commands from one matcher group; it returns nil
// for a group left with no hooks (install gives its hooks groups of their
// own).
func stripGroup(g json.RawMessage, only string) (json.RawMessage, int, []string) {
	var group object
	if json.Unmarshal(g, &group) != nil {
		return g, 0, nil
	}
	raw, ok := group.get("hooks")
	var hooks []json.RawMessage
	if !ok || json.Unmarshal(raw, &hooks) != nil {
		return g, 0, nil
	}
	kept := make([]json.RawMessage, 0, len(hooks))
	var who []string
	for _, h := range hooks {
		var c struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(h, &c) == nil {
			if m := ourHook.FindStringSubmatch(c.Command); m != nil && (only == "" || m[2] == only) {
				who = append(who, m[2])
				continue
			}
		}
		kept = append(kept, h)
	}
	switch {
	case len(who) == 0:
		return g, 0, nil
	case len(kept) == 0:
		return nil, len(who), who
	}
	if err := group.set("hooks", kept); err != nil {
		return g, 0, nil
	}
	out, _ := json.Marshal(group)
	return out, len(who), who
}

// install replaces whatever an install of ours left (for any agent: a
// directory is one agent) with t's hooks and status line, run by exe with
// the daemon's home. It returns the agents whose hooks were there before,
// and the user's own status line when one stays in place of ours.
func (s *claudeSettings) install(exe, home string, t api.Target) (before []string, kept string, err error) {
	if _, before, err = s.strip(""); err != nil {
		return nil, "", err
	}
	s.stripStatusLine("")
	if err := s.add(func(event string) string { return hookCommand(exe, home, event, t) }); err != nil {
		return nil, "", err
	}
	kept, err = s.addStatusLine(statusLineCommand(exe, home, t))
	return before, kept, err
}

// uninstall removes the hooks and status line of ours for agent only (the
// full target) and says how many entries it removed.
func (s *claudeSettings) uninstall(only string) (int, error) {
	n, _, err := s.strip(only)
	if err != nil {
		return 0, err
	}
	if s.stripStatusLine(only) {
		n++
	}
	return n, nil
}

// statusLine is the settings' status line command and whose it is: the
// agent an install of ours wrote it for, "" for the user's own (or none).
func (s *claudeSettings) statusLine() (command, agent string, ok bool) {
	raw, ok := s.top.get("statusLine")
	if !ok {
		return "", "", false
	}
	var sl struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(raw, &sl)
	if m := ourStatusLine.FindStringSubmatch(sl.Command); m != nil {
		return sl.Command, m[1], true
	}
	return sl.Command, "", true
}

// stripStatusLine removes our status line when it is only's (any agent's
// for ""), and says whether it did; the user's own is never touched.
func (s *claudeSettings) stripStatusLine(only string) bool {
	if _, agent, ok := s.statusLine(); ok && agent != "" && (only == "" || agent == only) {
		s.top.del("statusLine")
		return true
	}
	return false
}

// addStatusLine sets the status line to command unless the user has one
// of their own, which stays: it returns that command then, "" when ours
// was set.
func (s *claudeSettings) addStatusLine(command string) (kept string, err error) {
	if theirs, agent, ok := s.statusLine(); ok && agent == "" {
		if theirs == "" {
			theirs = "(a status line without a command)"
		}
		return theirs, nil
	}
	sl := object{}
	_ = sl.set("type", "command")
	_ = sl.set("command", command)
	_ = sl.set("padding", 0)
	return "", s.top.set("statusLine", sl)
}

// add appends a group of its own for each hook event, running command(event).
func (s *claudeSettings) add(command func(event string) string) error {
	for _, event := range installedEvents {
		var groups []json.RawMessage
		if raw, ok := s.hooks.get(event); ok {
			if err := json.Unmarshal(raw, &groups); err != nil {
				return fmt.Errorf("%s: hooks.%s is not a list (%v): fix it first", s.path, event, err)
			}
		}
		group := object{}
		if slices.Contains(matchAll, event) {
			_ = group.set("matcher", "*") // before or after every tool
		}
		hook := object{}
		_ = hook.set("type", "command")
		_ = hook.set("command", command(event))
		_ = hook.set("timeout", hookTimeoutSeconds)
		_ = group.set("hooks", []object{hook})
		b, _ := json.Marshal(group)
		if err := s.hooks.set(event, append(groups, b)); err != nil {
			return err
		}
	}
	return nil
}

// save writes the settings back through a temporary file; settings left
// with nothing at all remove the file.
func (s *claudeSettings) save() error {
	if len(s.hooks) == 0 {
		s.top.del("hooks")
	} else if err := s.top.set("hooks", s.hooks); err != nil {
		return err
	}
	if len(s.top) == 0 {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	compact, err := json.Marshal(s.top)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, compact, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(s.path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".settings.local.json.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), s.path)
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}
