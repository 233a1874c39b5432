package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// Problem is one thing wrong with a workflow file, placed so an editor can
// jump to it. Msg says what is wrong and what to write instead. Col is 0 when
// only the line is known (YAML syntax errors), Line is 0 when neither is.
type Problem struct {
	File      string
	Line, Col int
	Msg       string
}

// String formats p the way compilers do, so editors and terminals link it.
func (p Problem) String() string {
	switch {
	case p.Line > 0 && p.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, p.Msg)
	case p.Line > 0:
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return p.File + ": " + p.Msg
}

// Problems is every problem found in one file, returned as a single error so
// a user fixes them all in one pass instead of one per run. Recover it with
// errors.As to show the problems individually.
type Problems []Problem

// Error puts one problem on each line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// sort orders problems by position so they read top to bottom like the file.
func (ps Problems) sort() {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Line != ps[j].Line {
			return ps[i].Line < ps[j].Line
		}
		return ps[i].Col < ps[j].Col
	})
}

// File is a parsed, validated workflow: the daemon keeps it to start
// instances under any number of tags and to diff it when the file changes.
// Strings that may hold ${{ }} variables are kept raw; Resolve fills them in.
type File struct {
	Name, Path, Dir string // Path is absolute or ""; Dir resolves relative paths
	Agents          []Agent
	Context         Context
	Params          []Param
	Setup           []SetupStep
	Kickoff         string
	// Budget caps what the workflow:tag may spend; nil: no cap.
	Budget *Budget
	// LoopGuard is how many agent messages in a row (no human or system
	// line between) pause the team: loop_guard.max_rounds, default
	// DefaultLoopGuard, 0 off.
	LoopGuard int
	Triggers  []Trigger
	// Report is the report: of every trigger that names none.
	Report *Report
	// Workspace, when set, gives each agent a git worktree of its own.
	Workspace *Workspace
	// Notify are the webhooks told about the workflow's events (notify:).
	Notify []Notify
	// Skills are the skills: folders, absolute: searched for skills
	// before the project's .agent-worker/skills/ and the user's.
	Skills []string
}

// DefaultLoopGuard is loop_guard.max_rounds when a file does not set it.
const DefaultLoopGuard = 30

// Agent is one team member as written in the file; Line lets the daemon point
// at its definition when the agent fails to start.
type Agent struct {
	Name, Backend, Model string // Backend is never "" or "default": those read as "sdk"
	SystemPrompt         string // the file's contents when system_prompt named a file
	Schedule             string // interval (Go duration) or 5-field cron, as written
	WakeupPrompt         string
	MaxSteps             int           // 0 = the backend's default
	Timeout              time.Duration // 0 = the backend's default
	MCPServers           []MCPServer   // sorted by name
	Env                  map[string]string
	Tools                []string // workspace tool sets (WorkspaceTools); nil: the backend's default (all), empty: none
	Provider             *Provider
	Sandbox              *backend.SandboxConfig     // the sandbox: policy, paths made absolute by Parse; nil: the daemon's default
	Limits               *backend.RunLimits         // the limits: of one run (pids, memory, cpu); nil: the daemon's --run-limits
	Approvals            *backend.ApprovalPolicy    // the actions that wait for a person (the agent's approvals:, else the workflow's); nil: none
	Config               map[string]json.RawMessage // the `config:` map by key, passed through to the backend untouched
	Budget               *Budget                    // this agent's own cap; nil: none
	// CanSpawn lets the agent call agent_spawn and agent_stop (and, in a
	// git workspace, integrate and discard worktrees); MaxSpawned caps its
	// live spawned agents (DefaultMaxSpawned when can_spawn is set).
	CanSpawn   bool
	MaxSpawned int
	// Roles route tasks to the agent: a task with a role goes only to
	// agents that have it (sorted, without repeats).
	Roles []string
	// Effort, when set, is started on the agent's first run if it has no
	// active effort (effort: {dir, skill}).
	Effort *AgentEffort
	Line   int
}

// DefaultMaxSpawned is how many live agents a can_spawn agent may have
// spawned at once when the file does not say.
const DefaultMaxSpawned = 5

// MCPServer is an MCP server of the agent's own, beside the team server the
// daemon always provides. Exactly one of Command and URL is set.
type MCPServer struct {
	Name         string
	Command      []string // program then its arguments
	URL          string
	Env, Headers map[string]string
}

// Provider points a backend at an OpenAI-compatible endpoint other than the
// model's default; APIKeyEnv names the variable holding the key so the key
// itself never sits in the file.
type Provider struct {
	Name, BaseURL, APIKeyEnv string
}

// Context says where the team's shared documents live and how long a message
// may be before it is stored as a resource.
type Context struct {
	Documents        string // docs provider: "file", "sqlite" or a plugin name; "" when the file names none (the daemon's default: file, or postgres in a cluster)
	DocsDir          string // the folder the documents themselves go in, absolute once resolved; "" = .workflow/<wf>/<tag>/documents/ beside the file
	DocumentOwner    string // an agent name, or ""
	LongMessageChars int    // 0 = the daemon's default (4000)
}

// Param is a value the user passes after `--`, used as ${{ params.NAME }}.
type Param struct {
	Name, Description string
	Type              string // string, number or boolean
	Short             string // one character for -x, or ""
	Required          bool
	Default           string // "" when none
}

// SetupStep is a shell command run before the kickoff; its trimmed stdout
// becomes ${{ As }} for later steps, the agents and the kickoff.
type SetupStep struct {
	Shell, As string
	Timeout   time.Duration // 60s unless the step says otherwise
	Line      int
}

// Trigger is a webhook that posts Message into the workflow's channel:
// POST /hooks/<workflow>/<Name>, signed with the secret held in the
// daemon's environment variable SecretEnv. Message may use ${{ body.PATH }}
// (a dot path into the request's JSON body) beside the workflow's other
// variables; Resolve fills in the others and RenderTrigger the body.
//
// Provider says how a delivery is checked (hmac when the file names
// none); Events, when set, are the events it takes (EventName), others
// being acknowledged and not posted. Report, when set, posts a result
// back when the team goes idle after a delivery; a trigger without one
// takes the workflow's report: (Resolve).
type Trigger struct {
	Name, SecretEnv, Message string
	Provider                 HookProvider
	Events                   []string
	Report                   *Report
	Line                     int
}

// Load reads and parses the workflow file at path, so callers holding only a
// path get the same problems as those holding its content.
func Load(path string, opts ...ParseOption) (*File, error) {
	content, err := ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("workflow file %s not found: check the path", path)
	case errors.Is(err, ErrTooLarge):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("read workflow file: %w", err)
	}
	return Parse(path, content, opts...)
}

// Size limits. A workflow file, a system_prompt file and a system prompt
// (inline or from a file, once its ${{ }} values are filled in) are each at
// most 1 MiB: far more than any real prompt, and small enough that a file
// written by mistake (a log, a dump) cannot swell the daemon or be sent to
// a model with every run.
const (
	MaxFileBytes         = 1 << 20
	MaxSystemPromptBytes = 1 << 20
)

// ErrTooLarge matches (with errors.Is) every error about a size limit, so
// callers can answer "too large" whatever the file.
var ErrTooLarge = errors.New("too large")

// SizeError is a file or prompt over its limit.
type SizeError struct {
	What  string // "workflow file /path/x.yaml", "system_prompt file prompts/a.md", ...
	Size  int64  // -1 when the file was cut off while reading (not a regular file)
	Limit int64
}

func (e *SizeError) Error() string {
	size := "larger than " + FormatBytes(e.Limit)
	if e.Size >= 0 {
		size = FormatBytes(e.Size)
	}
	return fmt.Sprintf("%s is %s; the limit is %s: shorten it", e.What, size, FormatBytes(e.Limit))
}

// Is makes every SizeError match ErrTooLarge.
func (e *SizeError) Is(target error) bool { return target == ErrTooLarge }

// FormatBytes writes a size so that one just over a limit still reads as
// over it: exact bytes up to 10 MiB (1048577 bytes), then MiB (50.0 MiB);
// whole MiB as such (1 MiB).
func FormatBytes(n int64) string {
	switch {
	case n > 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n < 10<<20:
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// ReadFile reads the workflow file at path. A file over MaxFileBytes is
// refused from its size alone, and no more than the limit is ever read,
// whatever the file claims (a pipe, /dev/zero), so a huge file cannot swell
// the daemon.
func ReadFile(path string) ([]byte, error) {
	return ReadLimited(path, "workflow file "+path, MaxFileBytes)
}

// ReadLimited reads the file at path if it holds at most limit bytes, and
// otherwise returns a SizeError naming it as what, having read no more than
// the limit. Only a regular file is read: it is opened without blocking
// and checked before a byte is read, so a FIFO, a device or a socket is
// refused at once instead of holding the caller in open or read.
func ReadLimited(path, what string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s): give the path of a file", what, kindOf(fi.Mode()))
	}
	if fi.Size() > limit {
		return nil, &SizeError{What: what, Size: fi.Size(), Limit: limit}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &SizeError{What: what, Size: -1, Limit: limit}
	}
	return b, nil
}

// kindOf names a file mode that is not a regular file's.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a file"
}

// Budget caps spend since the workflow (re)started; a nil limit is unset.
type Budget struct {
	USD          *float64
	Tokens, Runs *int64
	// Hard cancels a run in flight that crosses the budget instead of
	// letting it finish.
	Hard bool
}
