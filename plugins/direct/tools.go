package direct

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	sdktools "github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// connectTimeout bounds the start of one of the agent's own MCP servers, so
// that a server that never answers fails the run instead of hanging it.
const connectTimeout = 30 * time.Second

// caller calls a tool of one MCP server and returns the text for the
// model; a tool's refusal is isError, anything else failing is err.
type caller func(ctx context.Context, tool string, args map[string]any) (output, error)

// output is what a tool call gave: the text for the model, whether it is
// a refusal, and a shell command's exit status (nil for other tools and
// a command that did not end by itself), which the daemon takes as
// evidence.
type output struct {
	text    string
	isError bool
	exit    *int
}

// route is where an offered tool name goes.
type route struct {
	server, tool string
	call         caller
}

// toolbox is the tools a run offers its model: the daemon's under their
// own names, the workspace tools (read_file, run_shell…), then those of
// the agent's own servers as <server>__<tool>.
type toolbox struct {
	specs  []toolSpec
	routes map[string]route
	closes []func() error
}

func openTools(ctx context.Context, daemon *worker.Client, own []backend.MCPServer, dir string, ws *workspace, out *sender) (_ *toolbox, err error) {
	tb := &toolbox{routes: map[string]route{}}
	defer func() {
		if err != nil {
			tb.close()
		}
	}()
	tools, err := daemon.Tools(ctx)
	if err != nil {
		return nil, err
	}
	if err := tb.add("", tools, daemonCaller(daemon), out); err != nil {
		return nil, err
	}
	if ws != nil {
		ws.approve = func(ctx context.Context, action string) (string, error) {
			_, _, err := daemon.Call(ctx, sdktools.ApprovalWait, map[string]any{"action": action})
			var te *worker.ToolError
			if errors.As(err, &te) {
				return te.Message, nil
			}
			return "", err
		}
		if err := tb.add("", ws.tools(), gated(daemon, ws, out), out); err != nil {
			return nil, err
		}
	}
	for _, s := range own {
		session, err := connect(ctx, s, dir)
		if err != nil {
			return nil, err
		}
		tb.closes = append(tb.closes, session.Close)
		var tools []*mcp.Tool
		for t, err := range session.Tools(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("sdk: mcp server %s: list tools: %w", s.Name, err)
			}
			tools = append(tools, t)
		}
		if err := tb.add(s.Name, tools, sessionCaller(s.Name, session), out); err != nil {
			return nil, err
		}
	}
	return tb, nil
}

var badToolChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// add offers tools under names the model APIs accept (letters, digits, _
// and -, at most 64); a name taken already is skipped with a log line.
func (tb *toolbox) add(server string, tools []*mcp.Tool, call caller, out *sender) error {
	for _, t := range tools {
		name := t.Name
		if server != "" {
			name = server + "__" + t.Name
		}
		name = badToolChars.ReplaceAllString(name, "_")
		name = name[:min(len(name), 64)]
		if _, taken := tb.routes[name]; taken {
			if err := out.send(backend.Event{Kind: backend.EventLog, Text: fmt.Sprintf("sdk: tool %s of %s has the name of another tool; not offered", t.Name, cmp.Or(server, "the daemon"))}); err != nil {
				return err
			}
			continue
		}
		schema, err := schemaOf(t.InputSchema)
		if err != nil {
			return fmt.Errorf("sdk: tool %s: input schema: %w", name, err)
		}
		tb.routes[name] = route{server: server, tool: t.Name, call: call}
		tb.specs = append(tb.specs, toolSpec{name: name, description: t.Description, schema: schema})
	}
	return nil
}

// schemaOf returns a tool's input schema as a JSON object schema the model
// APIs accept: type object, with properties even when there are none.
func schemaOf(s any) (map[string]any, error) {
	m := map[string]any{}
	if s != nil {
		b, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
	}
	m["type"] = "object"
	if _, ok := m["properties"].(map[string]any); !ok {
		m["properties"] = map[string]any{}
	}
	return m, nil
}

// call runs one tool call of the model, emitting its call and result
// events. Bad arguments and unknown tools are results the model can read
// and correct; only a failure to reach a server ends the run.
func (tb *toolbox) call(ctx context.Context, c call, out *sender) (result, error) {
	if err := out.send(backend.Event{Kind: backend.EventToolCall, Tool: &backend.ToolCall{ID: c.id, Name: c.name, Args: c.args}}); err != nil {
		return result{}, err
	}
	r := result{id: c.id}
	var exit *int
	args := map[string]any{}
	rt, ok := tb.routes[c.name]
	switch {
	case !ok:
		r.text, r.isError = fmt.Sprintf("there is no tool %q", c.name), true
	case len(c.args) > 0 && json.Unmarshal(c.args, &args) != nil:
		r.text, r.isError = fmt.Sprintf("the arguments of %s are not a JSON object: %s", c.name, c.args), true
	default:
		o, err := rt.call(ctx, rt.tool, args)
		if err != nil {
			return result{}, err
		}
		r.text, r.isError, exit = o.text, o.isError, o.exit
	}
	if r.text == "" {
		r.text = "(no output)" // the APIs refuse empty tool results
	}
	err := out.send(backend.Event{Kind: backend.EventToolResult,
		Tool: &backend.ToolCall{ID: c.id, Name: c.name, Args: c.args, Result: r.text, IsError: r.isError, Exit: exit}})
	return r, err
}

func (tb *toolbox) close() {
	for _, c := range tb.closes {
		_ = c()
	}
}

// daemonCaller calls the daemon's tools. Their text is a short summary, so
// the model also gets the structured result (an inbox, a document).
func daemonCaller(c *worker.Client) caller {
	return func(ctx context.Context, tool string, args map[string]any) (output, error) {
		structured, text, err := c.Call(ctx, tool, args)
		var te *worker.ToolError
		if errors.As(err, &te) {
			return output{text: te.Message, isError: true}, nil
		}
		if err != nil {
			return output{}, fmt.Errorf("sdk: daemon tool %w", err)
		}
		if len(structured) > 0 {
			text = strings.TrimSpace(text + "\n" + string(structured))
		}
		return output{text: text}, nil
	}
}

// sessionCaller calls the tools of one of the agent's own servers, whose
// text content is the result (structured content only when there is none).
func sessionCaller(server string, s *mcp.ClientSession) caller {
	return func(ctx context.Context, tool string, args map[string]any) (output, error) {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return output{}, fmt.Errorf("sdk: mcp server %s: %s: %w", server, tool, err)
		}
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		text := strings.Join(parts, "\n")
		if text == "" && res.StructuredContent != nil {
			b, _ := json.Marshal(res.StructuredContent)
			text = string(b)
		}
		return output{text: text, isError: res.IsError}, nil
	}
}

// gated is the caller of the workspace tools: each call is first put to
// the daemon's gate (the phase of the agent's effort decides, issue 43).
// A refused call does not run: its result is the phase's reason, an error
// the model reads, and the transcript gets a gate event with it. A daemon
// that cannot be asked refuses (worker.Gate).
func gated(daemon *worker.Client, ws *workspace, out *sender) caller {
	return func(ctx context.Context, tool string, args map[string]any) (output, error) {
		in, err := ws.forCall(args)
		if err != nil {
			return output{text: err.Error(), isError: true}, nil // a repo the run lacks: nothing to gate
		}
		gc := sdktools.GateCall{Tool: tool}
		if tool == "run_shell" {
			gc.Command, _ = args["command"].(string)
		} else if p, _ := args["path"].(string); p != "" {
			gc.Path = in.abs(p) // in the repository the call names
		}
		if d := daemon.Gate(ctx, gc); !d.Allowed {
			if err := out.send(backend.Event{Kind: backend.EventGate, Text: d.Reason}); err != nil {
				return output{}, err
			}
			return output{text: d.Reason, isError: true}, nil
		}
		return ws.do(ctx, tool, args)
	}
}

// connect starts a session with one of the agent's own servers: a command
// speaking stdio (run in dir, with its env added to the plugin's), or a URL
// speaking streamable HTTP with its headers.
func connect(ctx context.Context, s backend.MCPServer, dir string) (*mcp.ClientSession, error) {
	var transport mcp.Transport
	switch {
	case len(s.Command) > 0:
		cmd := exec.Command(s.Command[0], s.Command[1:]...)
		cmd.Dir = dir
		cmd.Env = os.Environ()
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		transport = &mcp.CommandTransport{Command: cmd}
	case s.URL != "":
		transport = &mcp.StreamableClientTransport{Endpoint: s.URL, DisableStandaloneSSE: true,
			HTTPClient: worker.HeaderClient(s.Headers)}
	default:
		return nil, backend.Permanent(fmt.Errorf("sdk: mcp server %s: give it a command or a url", s.Name))
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "agent-worker-sdk", Version: Version}, nil).Connect(ctx, transport, nil)
	if err != nil {
		err = fmt.Errorf("sdk: mcp server %s: %w", s.Name, err)
		if errors.Is(err, exec.ErrNotFound) {
			return nil, backend.Permanent(err)
		}
		return nil, err
	}
	return session, nil
}
