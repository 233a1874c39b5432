package direct

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/sandbox"
)

// The workspace tool sets an agent's `tools:` list switches, each naming
// the model tools it offers. workflow.WorkspaceTools lists the same names
// for load-time checks.
var toolSets = map[string][]string{
	"read":   {"read_file"},
	"write":  {"write_file", "edit_file"},
	"list":   {"list_files"},
	"search": {"search_files"},
	"shell":  {"run_shell"},
}

// toolSetNames are toolSets' keys in the order the docs give them.
var toolSetNames = []string{"read", "write", "list", "search", "shell"}

const (
	// maxToolOutput bounds what one workspace tool call gives the model
	// (about 7,500 tokens); longer output is cut with a note of its size.
	maxToolOutput = 30_000
	// maxListEntries and maxMatches bound list_files and search_files.
	maxListEntries = 1000
	maxMatches     = 200
	// maxSearchFile skips larger files in search_files, which are rarely
	// source text.
	maxSearchFile = 4 << 20
	// maxWriteBytes bounds one write_file or edit_file.
	maxWriteBytes = 10 << 20
	// Shell commands get defaultShellTimeout unless the model asks for
	// another, up to maxShellTimeout.
	defaultShellTimeout = 2 * time.Minute
	maxShellTimeout     = 10 * time.Minute
)

// workspace is the agent's working directory and the tools that work in
// it. Every path a tool takes is resolved inside root, symlinks included;
// the shell starts there but is not kept in it: it has the plugin's
// files (all of them, or what the run's sandbox grants) and the sandbox's
// tool network, which is why an agent's tools list can leave it out.
// A call naming one of the run's repositories (its repo argument) works
// in a copy of the workspace whose root is that repository (in).
type workspace struct {
	root  string // absolute, symlinks resolved
	given string // absolute as the run request gave it, which the prompt shows
	// repos are the workspace's further repositories (the request's);
	// repo is the one this copy of the workspace works in ("" for the
	// working directory) and readOnly says the run may not write it.
	repos    []backend.Repo
	repo     string
	readOnly bool
	sets     []string
	env      []string // the shell's environment
	shell    time.Duration
	// policy is the run's sandbox (zero: none); the file tools run
	// confined by it in the plugin process, run_shell under its tool
	// network.
	policy sandbox.Policy
	// report sends a line saying what the sandbox refused a tool as a
	// sandbox event; nil sends nothing.
	report func(line string) error
	// approvals gates run_shell commands matching its shell patterns;
	// approve asks a person through the daemon (approval_wait) and
	// returns nil once approved, the refusal's text otherwise.
	approvals *backend.ApprovalPolicy
	approve   func(ctx context.Context, action string) (refused string, err error)
}

// parseToolSets checks an agent's tools list; nil (no list) means all.
func parseToolSets(names *[]string) ([]string, error) {
	if names == nil {
		return toolSetNames, nil
	}
	var out []string
	for _, n := range *names {
		if _, ok := toolSets[n]; !ok {
			return nil, fmt.Errorf("config: tools: unknown tool %q: use some of %s, or [] for none", n, strings.Join(toolSetNames, ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func newWorkspace(dir string, sets []string, env []string) (*workspace, error) {
	if dir == "" {
		return nil, errors.New("the run has no project directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	return &workspace{root: root, given: filepath.Clean(abs), sets: sets, env: env, shell: defaultShellTimeout}, nil
}

// tools returns the enabled tools in the form the toolbox offers.
func (w *workspace) tools() []*mcp.Tool {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	integer := func(desc string) map[string]any { return map[string]any{"type": "integer", "description": desc} }
	boolean := func(desc string) map[string]any { return map[string]any{"type": "boolean", "description": desc} }
	obj := func(props map[string]any, required ...string) map[string]any {
		s := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	pathArg := str("a path relative to your working directory (absolute paths must lie inside it)")
	// withRepo adds the repo argument, offered only to a run that has
	// repositories, so that the tools of one without stay as they were.
	withRepo := func(schema map[string]any) map[string]any {
		if len(w.repos) > 0 {
			schema["properties"].(map[string]any)["repo"] = str(fmt.Sprintf(
				"a repository of the workspace to work in instead of your working directory (one of %s); paths are then relative to it",
				strings.Join(w.repoNames(), ", ")))
		}
		return schema
	}
	all := map[string]*mcp.Tool{
		"read_file": {Name: "read_file", InputSchema: obj(map[string]any{"path": pathArg,
			"offset": integer("first line to show, from 1 (default 1)"), "limit": integer("how many lines to show (default: as many as fit)")}, "path"),
			Description: "Read a text file in your working directory. Long files are cut with a note saying how to read on."},
		"write_file": {Name: "write_file", InputSchema: obj(map[string]any{"path": pathArg, "content": str("the file's whole new content")}, "path", "content"),
			Description: "Create or overwrite a file in your working directory (parent directories are created)."},
		"edit_file": {Name: "edit_file", InputSchema: obj(map[string]any{"path": pathArg,
			"old_text": str("exact text to replace; it must occur once unless replace_all"), "new_text": str("the replacement"),
			"replace_all": boolean("replace every occurrence")}, "path", "old_text", "new_text"),
			Description: "Replace text in a file in your working directory."},
		"list_files": {Name: "list_files", InputSchema: obj(map[string]any{"path": str("a directory (default: your working directory)"),
			"recursive": boolean("list subdirectories too (.git is not entered)")}),
			Description: "List the files and directories in your working directory (directories end in /)."},
		"search_files": {Name: "search_files", InputSchema: obj(map[string]any{"pattern": str("a regular expression (RE2 syntax)"),
			"path": str("a file or directory to search (default: your working directory)"), "glob": str("only files whose name matches, e.g. *.go")}, "pattern"),
			Description: "Search the text files in your working directory for a regular expression, like grep -rn; answers path:line: text."},
		"run_shell": {Name: "run_shell", InputSchema: obj(map[string]any{"command": str("a command for /bin/sh -c"),
			"timeout_seconds": integer(fmt.Sprintf("kill it after this long (default %d, at most %d)", int(defaultShellTimeout.Seconds()), int(maxShellTimeout.Seconds())))}, "command"),
			Description: "Run a shell command in your working directory; answers its output (stdout and stderr) and exit status. It is killed with everything it started when it times out; background processes end with it."},
	}
	var out []*mcp.Tool
	for _, set := range w.sets {
		for _, name := range toolSets[set] {
			t := all[name]
			t.InputSchema = withRepo(t.InputSchema.(map[string]any))
			out = append(out, t)
		}
	}
	return out
}

// call is the toolbox's caller for the workspace tools. What the model got
// wrong (a bad path, a missing file) is a tool error it can read; nothing
// here ends the run.
func (w *workspace) call(ctx context.Context, tool string, args map[string]any) (string, bool, error) {
	o, err := w.do(ctx, tool, args)
	return o.text, o.isError, err
}

// do is call with a shell command's exit status.
func (w *workspace) do(ctx context.Context, tool string, args map[string]any) (output, error) {
	text, isError, exit, err := w.dispatch(ctx, tool, args)
	return output{text: text, isError: isError, exit: exit}, err
}

// repoNames are the names of the workspace's repositories, in order.
func (w *workspace) repoNames() []string {
	names := make([]string, len(w.repos))
	for i, r := range w.repos {
		names[i] = r.Name
	}
	return names
}

// in is the workspace a call naming repo works in: w itself for "", else
// a copy whose root is that repository, so that every path rule (inside
// it, symlinks resolved) holds per repository and the shell starts there.
// A repo the run does not have is an error the model reads.
func (w *workspace) in(repo string) (*workspace, error) {
	if repo == "" {
		return w, nil
	}
	r := backend.FindRepo(w.repos, repo)
	switch {
	case r == nil && len(w.repos) == 0:
		return nil, fmt.Errorf("repo %q is not in this workspace, which has no repositories: leave repo out", repo)
	case r == nil:
		return nil, fmt.Errorf("repo %q is not in this workspace: use one of %s", repo, strings.Join(w.repoNames(), ", "))
	}
	abs, err := filepath.Abs(r.Path)
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", r.Name, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("repository %s cannot be opened: %w", r.Name, err)
	}
	in := *w
	in.root, in.given, in.repo, in.readOnly = root, filepath.Clean(abs), r.Name, !r.Write
	return &in, nil
}

// where names the directory w works in, as the model knows it.
func (w *workspace) where() string {
	if w.repo == "" {
		return "your working directory"
	}
	return "repository " + w.repo
}

// abs is p as the gate gets it: absolute, a relative path taken from the
// directory the run was given (not resolved: the gate compares it with
// the effort's directory as given too, and resolves that itself).
func (w *workspace) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(w.given, p)
}

// dispatch runs tool in the directory its repo argument names (the
// working directory when none); a write to a read-only repository is
// refused here, so that it holds without a kernel sandbox too.
func (w *workspace) dispatch(ctx context.Context, tool string, args map[string]any) (string, bool, *int, error) {
	in, err := w.forCall(args)
	if err != nil {
		return err.Error(), true, nil, nil
	}
	if in.readOnly && slices.Contains(writers, tool) {
		return fmt.Sprintf("repository %s is read-only in this workspace: %s cannot change it", in.repo, tool), true, nil, nil
	}
	return in.dispatchHere(ctx, tool, args)
}

// forCall is the workspace a call's repo argument names.
func (w *workspace) forCall(args map[string]any) (*workspace, error) {
	v, ok := args["repo"]
	if !ok || v == nil {
		return w, nil
	}
	repo, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("repo must be a string naming a repository, not %v", v)
	}
	return w.in(repo)
}

// dispatchHere runs tool in w's own directory.
func (w *workspace) dispatchHere(ctx context.Context, tool string, args map[string]any) (string, bool, *int, error) {
	raw, _ := json.Marshal(args)
	var text string
	var err error
	switch tool {
	case "read_file":
		var a struct {
			Path          string
			Offset, Limit int
		}
		if err = json.Unmarshal(raw, &a); err == nil {
			text, err = w.read(a.Path, a.Offset, a.Limit)
		}
	case "write_file":
		var a struct{ Path, Content string }
		if err = json.Unmarshal(raw, &a); err == nil {
			text, err = w.write(a.Path, a.Content)
		}
	case "edit_file":
		var a struct {
			Path       string
			OldText    string `json:"old_text"`
			NewText    string `json:"new_text"`
			ReplaceAll bool   `json:"replace_all"`
		}
		if err = json.Unmarshal(raw, &a); err == nil {
			text, err = w.edit(a.Path, a.OldText, a.NewText, a.ReplaceAll)
		}
	case "list_files":
		var a struct {
			Path      string
			Recursive bool
		}
		if err = json.Unmarshal(raw, &a); err == nil {
			text, err = w.list(a.Path, a.Recursive)
		}
	case "search_files":
		var a struct{ Pattern, Path, Glob string }
		if err = json.Unmarshal(raw, &a); err == nil {
			text, err = w.search(a.Pattern, a.Path, a.Glob)
		}
	case "run_shell":
		var a struct {
			Command        string
			TimeoutSeconds int `json:"timeout_seconds"`
		}
		if err = json.Unmarshal(raw, &a); err == nil {
			if pattern := w.approvals.GatesShell(a.Command); pattern != "" {
				if w.approve == nil {
					return fmt.Sprintf("not run: %q needs a person's approval (approvals shell %q) and the daemon cannot be asked", a.Command, pattern), true, nil, nil
				}
				refused, err := w.approve(ctx, "run_shell: "+strings.TrimSpace(a.Command))
				if err != nil {
					return "", false, nil, err
				}
				if refused != "" {
					return "not run: " + refused, true, nil, nil
				}
			}
			var failed bool
			var exit *int
			text, failed, exit, err = w.run(ctx, a.Command, time.Duration(a.TimeoutSeconds)*time.Second)
			if err == nil {
				// The model reads what was refused after the output.
				var lines []string
				if !w.policy.IsZero() {
					lines = sandbox.Explain(w.policy, true, w.root, text)
				}
				for _, l := range lines {
					text += "\n" + refusalPrefix + l
				}
				return text, failed, exit, w.sendRefusals(lines)
			}
		}
	default:
		err = fmt.Errorf("there is no workspace tool %q", tool)
	}
	if err != nil {
		text = err.Error()
		if l := w.fileRefusal(tool, err); l != "" {
			return text + "\n" + refusalPrefix + l, true, nil, w.sendRefusals([]string{l})
		}
		return text, true, nil, nil
	}
	return text, false, nil, nil
}

// refusalPrefix marks, in a tool's result, a line saying what the sandbox
// refused; a sandbox event needs none.
const refusalPrefix = "sandbox: "

// sendRefusals reports each line as a sandbox event; an error is the
// daemon gone, which ends the run.
func (w *workspace) sendRefusals(lines []string) error {
	if w.report == nil {
		return nil
	}
	for _, l := range lines {
		if err := w.report(l); err != nil {
			return err
		}
	}
	return nil
}

// writers are the file tools that write, which a read-only path refuses.
var writers = []string{"write_file", "edit_file"}

// fileRefusal says, in Explain's words, that the run's sandbox denied a
// file tool err's path: EACCES or EPERM on a path the policy does not let
// the tool read (or write); "" for any other error. The path counts as
// inside when it is, either as resolved or as the request named the
// working directory.
func (w *workspace) fileRefusal(tool string, err error) string {
	var pe *fs.PathError
	if w.policy.IsZero() || !errors.Is(err, fs.ErrPermission) || !errors.As(err, &pe) {
		return ""
	}
	path := pe.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(w.root, path)
	}
	named := path
	if within(w.root, path) {
		rel, _ := filepath.Rel(w.root, path)
		named = filepath.Join(w.given, rel)
	}
	switch {
	case !w.policy.CanRead(path) && !w.policy.CanRead(named):
		return fmt.Sprintf("%s is outside the agent's sandbox (not readable)", path)
	case slices.Contains(writers, tool) && !w.policy.CanWrite(path) && !w.policy.CanWrite(named):
		return fmt.Sprintf("%s is outside the agent's sandbox (read-only)", path)
	}
	return ""
}

// outside is the error for path p, which leads (through via, when it is
// a symlink's target) out of the directory w works in; it names the
// repository p lies in, when it does, for a model that left repo out.
func (w *workspace) outside(p, via string) error {
	what := p + " is"
	if via != "" {
		what = fmt.Sprintf("%s leads through a symlink to %s, which is", p, via)
	}
	hint := "use a path inside it"
	for _, r := range w.repos {
		if r.Name != w.repo && filepath.IsAbs(p) && within(filepath.Clean(r.Path), filepath.Clean(p)) {
			hint = fmt.Sprintf("it is in repository %s: pass repo: %q", r.Name, r.Name)
		}
	}
	return fmt.Errorf("%s outside %s: %s", what, w.where(), hint)
}

// resolve turns a path the model gave into a real path inside root:
// relative paths start at root, absolute ones must lie inside it, and the
// part of the path that exists has its symlinks resolved, so a link
// pointing out of root is refused like "..".
func (w *workspace) resolve(p string) (string, error) {
	if p == "" {
		p = "."
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q holds a NUL byte", p)
	}
	full := filepath.Clean(p)
	switch {
	case !filepath.IsAbs(full):
		full = filepath.Join(w.root, full)
	case w.given != w.root && within(w.given, full):
		// The directory as the prompt names it, through a symlink.
		rel, _ := filepath.Rel(w.given, full)
		full = filepath.Join(w.root, rel)
	}
	if !within(w.root, full) {
		return "", w.outside(p, "")
	}
	// The longest part that exists (Lstat: a dangling symlink exists)
	// gets its links resolved; what follows does not exist yet.
	existing, rest := full, []string(nil)
	for {
		_, err := os.Lstat(existing)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		rest = append([]string{filepath.Base(existing)}, rest...)
		existing = filepath.Dir(existing)
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("%s: a symlink on the way leads nowhere: %w", p, err)
	}
	if !within(w.root, real) {
		return "", w.outside(p, real)
	}
	return filepath.Join(append([]string{real}, rest...)...), nil
}

// within reports whether path is root or lies under it (both clean).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// rel is path as the model should write it: relative to root.
func (w *workspace) rel(path string) string {
	if r, err := filepath.Rel(w.root, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

func (w *workspace) read(p string, offset, limit int) (string, error) {
	path, err := w.resolve(p)
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if st.IsDir() {
		return "", fmt.Errorf("%s is a directory: use list_files", p)
	}
	head := make([]byte, 8000)
	n, _ := io.ReadFull(f, head)
	if bytes.IndexByte(head[:n], 0) >= 0 {
		return fmt.Sprintf("%s is a binary file of %d bytes; not shown", p, st.Size()), nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	offset = max(offset, 1)
	var b strings.Builder
	r := bufio.NewReader(f)
	line, shown, cutAt := 0, 0, 0
	for {
		s, err := r.ReadString('\n')
		if s != "" {
			line++
			switch {
			case line < offset || cutAt > 0:
			case limit > 0 && shown >= limit, b.Len()+len(s) > maxToolOutput:
				cutAt = line
			default:
				b.WriteString(s)
				shown++
			}
		}
		if err != nil {
			break
		}
	}
	switch {
	case cutAt > 0:
		fmt.Fprintf(&b, "\n[cut: showing lines %d-%d of %d (the file has %d bytes); read on with offset=%d]", offset, cutAt-1, line, st.Size(), cutAt)
	case offset > line && line > 0:
		return "", fmt.Errorf("%s has %d lines; offset %d is past its end", p, line, offset)
	case st.Size() == 0:
		return fmt.Sprintf("%s is empty", p), nil
	}
	return b.String(), nil
}

func (w *workspace) write(p, content string) (string, error) {
	if len(content) > maxWriteBytes {
		return "", fmt.Errorf("content is %d bytes; at most %d can be written at once", len(content), maxWriteBytes)
	}
	path, err := w.resolve(p)
	if err != nil {
		return "", err
	}
	if path == w.root {
		return "", fmt.Errorf("%s is %s: give a file name", p, w.where())
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return "", fmt.Errorf("%s is a directory", p)
		}
		mode = st.Mode().Perm()
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(content), w.rel(path)), nil
}

func (w *workspace) edit(p, old, new string, all bool) (string, error) {
	if old == "" {
		return "", errors.New("old_text is empty: give the exact text to replace (write_file replaces a whole file)")
	}
	path, err := w.resolve(p)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("edit %s: %w", p, err)
	}
	s := string(b)
	n := strings.Count(s, old)
	switch {
	case n == 0:
		return "", fmt.Errorf("old_text does not occur in %s: read the file and copy the text exactly", p)
	case n > 1 && !all:
		return "", fmt.Errorf("old_text occurs %d times in %s: give more surrounding text to pick one, or set replace_all", n, p)
	case !all:
		n = 1
	}
	s = strings.Replace(s, old, new, n)
	if len(s) > maxWriteBytes {
		return "", fmt.Errorf("the edited file would be %d bytes; at most %d can be written", len(s), maxWriteBytes)
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(s), st.Mode().Perm()); err != nil {
		return "", fmt.Errorf("edit %s: %w", p, err)
	}
	return fmt.Sprintf("replaced %d %s in %s", n, plural(n, "occurrence"), w.rel(path)), nil
}

func (w *workspace) list(p string, recursive bool) (string, error) {
	dir, err := w.resolve(p)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("list %s: %w", p, err)
	}
	if !st.IsDir() {
		return fmt.Sprintf("%s (a file of %d bytes)", w.rel(dir), st.Size()), nil
	}
	var lines []string
	total := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if path == dir {
			return err
		}
		if err != nil {
			return nil // unreadable: skipped
		}
		total++
		if len(lines) < maxListEntries {
			rel, _ := filepath.Rel(dir, path)
			rel = filepath.ToSlash(rel)
			switch {
			case d.IsDir():
				rel += "/"
			case d.Type()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(path)
				rel += " -> " + target
			default:
				if info, err := d.Info(); err == nil {
					rel = fmt.Sprintf("%s (%d bytes)", rel, info.Size())
				}
			}
			lines = append(lines, rel)
		}
		if d.IsDir() && (!recursive || d.Name() == ".git") {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("list %s: %w", p, err)
	}
	if total == 0 {
		return fmt.Sprintf("%s is empty", w.rel(dir)), nil
	}
	out := strings.Join(lines, "\n")
	if total > len(lines) {
		out += fmt.Sprintf("\n[cut: showing %d of %d entries; list a subdirectory]", len(lines), total)
	}
	return cut(out, maxToolOutput), nil
}

func (w *workspace) search(pattern, p, glob string) (string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("pattern: %w", err)
	}
	if glob != "" {
		if _, err := filepath.Match(glob, ""); err != nil {
			return "", fmt.Errorf("glob %q: %w", glob, err)
		}
	}
	start, err := w.resolve(p)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	shown, total := 0, 0
	// searchFile searches one file; its error is the file being unreadable.
	searchFile := func(path string) error {
		if glob != "" {
			if ok, _ := filepath.Match(glob, filepath.Base(path)); !ok {
				return nil
			}
		}
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() || st.Size() > maxSearchFile {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			return nil // binary
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !re.MatchString(line) {
				continue
			}
			total++
			entry := fmt.Sprintf("%s:%d: %s\n", w.rel(path), i+1, cut(line, 300))
			if shown < maxMatches && b.Len()+len(entry) <= maxToolOutput {
				b.WriteString(entry)
				shown++
			}
		}
		return nil
	}
	// What cannot be read is skipped, unless it is what the model asked
	// to search: then "no matches" would mislead it.
	denied := func(path string, err error) error {
		if path == start && errors.Is(err, fs.ErrPermission) {
			return err
		}
		return nil
	}
	err = filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return denied(path, err)
		case d.IsDir() && d.Name() == ".git" && path != start:
			return fs.SkipDir
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			// A link is searched only when it stays inside.
			if real, err := w.resolve(path); err == nil {
				if st, err := os.Stat(real); err == nil && st.Mode().IsRegular() {
					_ = searchFile(real)
				}
			}
			return nil
		}
		return denied(path, searchFile(path))
	})
	if err != nil {
		return "", fmt.Errorf("search %s: %w", p, err)
	}
	if total == 0 {
		return "no matches", nil
	}
	if total > shown {
		fmt.Fprintf(&b, "[cut: showing %d of %d matches; narrow the pattern, path or glob]", shown, total)
	}
	return b.String(), nil
}

// run runs command with /bin/sh in root (the repository's, for a call
// naming one), in a process group of its own
// that is killed whole when the command ends or times out, under the
// run's tool network (sandbox.RunTool). failed is set for a non-zero exit
// or a timeout; exit is the command's exit status when it ended by
// itself.
func (w *workspace) run(ctx context.Context, command string, timeout time.Duration) (text string, failed bool, exit *int, err error) {
	if strings.TrimSpace(command) == "" {
		return "", false, nil, errors.New("command is empty")
	}
	if timeout <= 0 {
		timeout = w.shell
	}
	timeout = min(timeout, maxShellTimeout)
	r, wr, err := os.Pipe()
	if err != nil {
		return "", false, nil, err
	}
	defer r.Close()
	var out capBuffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&out, r)
	}()

	// RunTool starts the command on a thread of its own, so the group is
	// killed from the command's Cancel, which runs once it has started.
	cmdCtx, stop := context.WithTimeout(ctx, timeout)
	defer stop()
	var killed atomic.Bool
	cmd := exec.CommandContext(cmdCtx, "/bin/sh", "-c", command)
	cmd.Dir, cmd.Env = w.root, w.env
	cmd.Stdout, cmd.Stderr = wr, wr // one pipe: output in the order it was written
	cmd.SysProcAttr = childProcAttr()
	cmd.Cancel = func() error {
		if syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) != nil {
			return os.ErrProcessDone // the group is gone: it was not killed
		}
		killed.Store(true)
		return nil
	}
	waitErr := sandbox.RunTool(cmd, w.policy)
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left running in the background
	}
	wr.Close() // the group holds the only write ends left, and it is dead
	<-copied
	if ctx.Err() != nil {
		return "", false, nil, ctx.Err()
	}
	if cmd.Process == nil {
		return "", false, nil, fmt.Errorf("start /bin/sh: %w", waitErr)
	}

	if text = out.String(); text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	var ee *exec.ExitError
	switch {
	case killed.Load():
		return text + fmt.Sprintf("[killed after %v with everything it started: the command did not finish in time; run it with a larger timeout_seconds, or in smaller steps]", timeout), true, nil, nil
	case errors.As(waitErr, &ee):
		code := ee.ExitCode()
		text += fmt.Sprintf("[exit status %d]", code)
		if code < 0 { // killed by a signal: no exit status
			return text, true, nil, nil
		}
		return text, true, &code, nil
	case waitErr != nil:
		return "", false, nil, waitErr
	}
	if text == "" {
		text = "(no output)\n"
	}
	zero := 0
	return text + "[exit status 0]", false, &zero, nil
}

// capBuffer keeps the start and the end of a long output and counts what
// it dropped between them.
type capBuffer struct {
	head, tail []byte
	total      int
}

func (c *capBuffer) Write(p []byte) (int, error) {
	n := len(p)
	c.total += n
	const half = maxToolOutput / 2
	if room := half - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*half { // trim now and then, not on every write
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-half:]...)
	}
	return n, nil
}

func (c *capBuffer) String() string {
	const half = maxToolOutput / 2
	tail := c.tail
	if len(tail) > half {
		tail = tail[len(tail)-half:]
	}
	if len(c.head)+len(tail) == c.total {
		return string(c.head) + string(tail)
	}
	return fmt.Sprintf("%s\n[output cut: %d bytes in all; showing the first %d and the last %d]\n%s",
		strings.ToValidUTF8(string(c.head), ""), c.total, len(c.head), len(tail), strings.ToValidUTF8(string(tail), ""))
}

// cut shortens s to at most n bytes on a rune boundary, noting the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("… [cut: %d bytes in all]", len(s))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
