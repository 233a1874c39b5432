package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"
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
}

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
	Config               json.RawMessage // the `config:` map, passed through to the backend untouched
	Line                 int
}

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
	Documents        string // docs provider: "file" (default), "sqlite" or a plugin name
	DocsDir          string // absolute once resolved; "" = the workflow file's directory
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

// Load reads and parses the workflow file at path, so callers holding only a
// path get the same problems as those holding its content.
func Load(path string) (*File, error) {
	content, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("workflow file %s not found: check the path", path)
	}
	if err != nil {
		return nil, fmt.Errorf("read workflow file: %w", err)
	}
	return Parse(path, content)
}
