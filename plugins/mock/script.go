package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// step is one parsed script step.
type step struct {
	index     int    // 1-based, as error messages count
	action    string // one of actions
	text      string // reply, text, result, fail, stderr, session, shell; tool: its name
	to        string
	args      map[string]any
	argv      []string // spawn: the command
	sleep     time.Duration
	usage     backend.Usage
	permanent bool
	n         int // crash: exit code; flood: how many
	hang      bool
	attempt   int    // 0: every attempt
	from      string // "": always; else only when an inbox message is from this sender
	contains  string // "": always; else only when an inbox message contains this text
	content   string // write: what to write
	repo      string // shell, write: the workspace repository to work in ("": the project directory)
}

// actions are the keys that make a step; exactly one per step.
var actions = []string{"reply", "tool", "sleep", "text", "result", "usage", "session", "fail", "hang", "crash", "flood", "stderr", "spawn", "shell", "write"}

// modifiers are the other keys, with the actions each belongs to (none:
// any).
var modifiers = map[string][]string{"to": {"reply"}, "args": {"tool"}, "permanent": {"fail"}, "content": {"write"},
	"repo": {"shell", "write"}, "when": nil}

// loadScript reads the script of req's agent config; configured is false
// when there is none, so the default script applies.
func loadScript(req backend.Request) (steps []step, configured bool, err error) {
	raw := bytes.TrimSpace(req.Agent.Config)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, false, fmt.Errorf("config: want a JSON object: %w", err)
	}
	for k := range cfg {
		// env, sandbox and approvals are the daemon's to apply: the first
		// is already in the mock's environment, the second confines its
		// process, the third gates its calls of daemon tools.
		if k != "script" && k != "script_file" && k != "env" && k != "sandbox" && k != "approvals" {
			return nil, false, fmt.Errorf("config: unknown key %q (the mock takes script or script_file, env, sandbox and approvals)", k)
		}
	}
	script, hasScript := cfg["script"]
	file, hasFile := cfg["script_file"]
	switch {
	case hasScript && hasFile:
		return nil, false, errors.New("config: give script or script_file, not both")
	case hasScript:
		steps, err = parseSteps(script)
		return steps, true, err
	case hasFile:
		var name string
		if err := json.Unmarshal(file, &name); err != nil || name == "" {
			return nil, false, errors.New("config: script_file: want a file name")
		}
		steps, err = readScriptFile(req.ProjectDir, name)
		return steps, true, err
	}
	return nil, false, nil
}

// maxScriptFile bounds a script file: a script is a few steps.
const maxScriptFile = 1 << 20

// readRegular reads a regular file of at most maxScriptFile bytes; a FIFO
// or device is refused at once rather than blocking the run in open.
func readRegular(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file (%s): name a script file", path, fi.Mode().Type())
	case fi.Size() > maxScriptFile:
		return nil, fmt.Errorf("%s is %d bytes, over the %d a script file may have", path, fi.Size(), maxScriptFile)
	}
	return io.ReadAll(io.LimitReader(f, maxScriptFile))
}

// readScriptFile reads a JSON or YAML script, relative to dir.
func readScriptFile(dir, name string) ([]step, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, name)
	}
	src, err := readRegular(path)
	if err != nil {
		return nil, fmt.Errorf("script_file: %w", err)
	}
	var steps []step
	if filepath.Ext(path) == ".json" || bytes.HasPrefix(bytes.TrimSpace(src), []byte("[")) {
		steps, err = parseSteps(src)
		if err != nil {
			return nil, fmt.Errorf("script_file %s: %w", name, err)
		}
	} else if steps, err = parseYAMLScript(name, src); err != nil {
		return nil, fmt.Errorf("script_file %w", err) // the error begins with name:line
	}
	return steps, nil
}

// stepError is a step the mock refuses. key is the step's key it is about
// ("" for the step as a whole), so that a YAML script can name its line.
type stepError struct {
	step int // 1-based
	key  string
	err  error
}

func (e *stepError) Error() string { return fmt.Sprintf("script step %d: %v", e.step, e.err) }
func (e *stepError) Unwrap() error { return e.err }

// parseSteps decodes a list of steps, refusing anything it would otherwise
// have to ignore.
func parseSteps(raw json.RawMessage) ([]step, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("script: want a list of steps such as [{\"reply\": \"hi\"}]: %w", err)
	}
	steps := make([]step, 0, len(list))
	for i, item := range list {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(item, &m); err != nil {
			return nil, &stepError{step: i + 1, err: fmt.Errorf("want a step such as {\"reply\": \"hi\"}, not %s", item)}
		}
		s, err := parseStep(i+1, m)
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
	return steps, nil
}

func parseStep(i int, m map[string]json.RawMessage) (step, error) {
	s := step{index: i}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if slices.Contains(actions, k) {
			if s.action != "" {
				return s, &stepError{i, k, fmt.Errorf("both %q and %q: put each action in its own step", s.action, k)}
			}
			s.action = k
			continue
		}
		if _, ok := modifiers[k]; !ok {
			return s, &stepError{i, k, fmt.Errorf("unknown key %q (actions: %s; with them: to, args, permanent, content, repo, when)", k, strings.Join(actions, ", "))}
		}
	}
	if s.action == "" {
		return s, &stepError{i, "", fmt.Errorf("no action: use one of %s", strings.Join(actions, ", "))}
	}
	for _, k := range keys {
		if owners := modifiers[k]; len(owners) > 0 && !slices.Contains(owners, s.action) {
			return s, &stepError{i, k, fmt.Errorf("%q goes only with %s, not %q", k, quoted(owners), s.action)}
		}
		if err := s.set(k, m[k]); err != nil {
			return s, &stepError{i, k, fmt.Errorf("%s: %w", k, err)}
		}
	}
	return s, nil
}

// set decodes the value of key k into s.
func (s *step) set(k string, v json.RawMessage) error {
	switch k {
	case "reply", "text", "result", "fail", "stderr":
		return strict(v, &s.text, "a string")
	case "tool", "session":
		if err := strict(v, &s.text, "a string"); err != nil {
			return err
		}
		if s.text == "" {
			return errors.New("must not be empty")
		}
	case "to":
		return strict(v, &s.to, "an agent name")
	case "spawn":
		if err := strict(v, &s.argv, `a command as a list, e.g. ["sleep", "60"]`); err != nil {
			return err
		}
		if len(s.argv) == 0 {
			return errors.New("must name a command")
		}
	case "shell":
		if err := strict(v, &s.text, `a command line, e.g. "ls -la"`); err != nil {
			return err
		}
		if strings.TrimSpace(s.text) == "" {
			return errors.New("must not be empty")
		}
	case "write":
		if err := strict(v, &s.text, `a file's path, e.g. "notes/plan.md"`); err != nil {
			return err
		}
		if strings.TrimSpace(s.text) == "" {
			return errors.New("must not be empty")
		}
	case "content":
		return strict(v, &s.content, "the file's text")
	case "repo":
		if err := strict(v, &s.repo, "a repository's name from the workspace's repos"); err != nil {
			return err
		}
		if s.repo == "" {
			return errors.New("must not be empty")
		}
	case "args":
		return strict(v, &s.args, "an object of tool arguments")
	case "permanent":
		return strict(v, &s.permanent, "true or false")
	case "hang":
		return strict(v, &s.hang, "true or false")
	case "sleep":
		var d string
		if err := strict(v, &d, `a duration such as "500ms"`); err != nil {
			return err
		}
		var err error
		if s.sleep, err = time.ParseDuration(d); err != nil || s.sleep < 0 {
			return fmt.Errorf("%q: want a duration such as \"500ms\" or \"2s\"", d)
		}
	case "crash":
		if err := strict(v, &s.n, "an exit code"); err != nil {
			return err
		}
		if s.n < 0 || s.n > 255 {
			return fmt.Errorf("exit code %d: want 0 to 255", s.n)
		}
	case "flood":
		if err := strict(v, &s.n, "a number of events"); err != nil {
			return err
		}
		if s.n < 0 {
			return fmt.Errorf("%d: want a count of events", s.n)
		}
	case "usage":
		var u struct {
			Input  int64   `json:"input"`
			Output int64   `json:"output"`
			Cost   float64 `json:"cost"`
		}
		if err := strict(v, &u, "an object with input, output and cost"); err != nil {
			return err
		}
		s.usage = backend.Usage{InputTokens: u.Input, OutputTokens: u.Output, CostUSD: u.Cost}
	case "when":
		var w struct {
			Attempt *int   `json:"attempt"`
			From    string `json:"from"`
			Text    string `json:"text"`
		}
		if err := strict(v, &w, "an object such as {\"attempt\": 1}, {\"from\": \"bob\"} or {\"text\": \"review\"}"); err != nil {
			return err
		}
		if w.Attempt == nil && w.From == "" && w.Text == "" {
			return errors.New("give attempt, from, text or a combination")
		}
		s.contains = w.Text
		if w.Attempt != nil {
			if *w.Attempt < 1 {
				return errors.New("attempt: want 1 or more")
			}
			s.attempt = *w.Attempt
		}
		s.from = w.From
	}
	return nil
}

// quoted is names as "a" or "a" or "b", for an error.
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, " or ")
}

// strict decodes v into dst, refusing unknown object keys; the error says
// what was wanted.
func strict(v json.RawMessage, dst any, want string) error {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return fmt.Errorf("want %s, not %s", want, v)
		}
		return fmt.Errorf("want %s: %w", want, err)
	}
	return nil
}

// defaultScript is the seed's mock: acknowledge the inbox without waking
// anyone, then finish.
func defaultScript(inbox bool) []step {
	var steps []step
	if inbox {
		steps = append(steps, step{index: 1, action: "reply", text: "[{{name}}] Processed: {{inbox_summary}}"})
	}
	return append(steps, step{index: len(steps) + 1, action: "result", text: "{{name}} done."})
}

// placeholders fills a run's {{…}} placeholders.
func placeholders(wc worker.Context, attempt int, req backend.Request) *strings.Replacer {
	first := ""
	if len(wc.Inbox) > 0 {
		first = wc.Inbox[0].From
	}
	return strings.NewReplacer(
		"{{name}}", wc.Agent.Name,
		"{{workflow}}", wc.Agent.Workflow,
		"{{tag}}", wc.Agent.Tag,
		"{{attempt}}", strconv.Itoa(attempt),
		"{{first_sender}}", first,
		"{{inbox_summary}}", inboxSummary(wc.Inbox),
		"{{proposal}}", inboxProposal(wc.Inbox),
		"{{resume}}", req.ResumeSession,
		"{{state_dir}}", req.StateDir,
	)
}

var proposalID = regexp.MustCompile(`\bprop-\d+\b`)

// inboxProposal is the first proposal id (prop-N) the inbox mentions, so a
// scripted agent can vote on a proposal a teammate opened.
func inboxProposal(inbox []worker.Message) string {
	for _, m := range inbox {
		if id := proposalID.FindString(m.Content); id != "" {
			return id
		}
	}
	return ""
}

// inboxSummary is "<from>: <first 80 characters, @ removed>" per message,
// joined with "; " and cut to 200 characters; without @ it wakes no one.
func inboxSummary(inbox []worker.Message) string {
	parts := make([]string, len(inbox))
	for i, m := range inbox {
		parts[i] = m.From + ": " + strings.ReplaceAll(cut(m.Content, 80), "@", "")
	}
	return cut(strings.Join(parts, "; "), 200)
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// expand fills placeholders in every string of v (tool arguments).
func expand(fill func(string) string, v any) any {
	switch v := v.(type) {
	case string:
		return fill(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = expand(fill, x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = expand(fill, x)
		}
		return out
	}
	return v
}

// resultRef is {{last.FIELD}} or {{step.N.FIELD}}: a top-level field of a
// tool step's structured result, such as the id task_create returned.
var resultRef = regexp.MustCompile(`\{\{(last|step\.(\d+))\.([A-Za-z0-9_]+)\}\}`)

// fill replaces the run's placeholders in s, and the results of its tool
// steps so far; a field that is missing (or a step that has not run)
// becomes "".
func (r *run) fill(s string) string {
	s = r.vars.Replace(s)
	if !strings.Contains(s, "{{") {
		return s
	}
	return resultRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := resultRef.FindStringSubmatch(ref)
		n := r.last
		if m[2] != "" {
			n, _ = strconv.Atoi(m[2])
		}
		switch v := r.results[n][m[3]].(type) {
		case nil:
			return ""
		case string:
			return v
		default:
			b, _ := json.Marshal(v)
			return string(b)
		}
	})
}
