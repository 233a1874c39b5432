// Command cursor-agent is a scripted stand-in for Cursor's CLI, which
// cannot be installed here. It accepts the documented headless command
// line (-p --output-format stream-json --force "<prompt>"), reads the MCP
// servers of <workspace>/.cursor/mcp.json as the real CLI does, really
// calls the daemon's channel_send over MCP with the configured headers
// when the prompt shows an inbox, and prints the documented stream-json
// events (system/init, user, assistant, tool_call started/completed,
// result).
//
// STANDIN_MODE changes its behaviour: hang (block after init), fail (exit
// 3 with a stderr line), error-result (an error result event), no-result
// (the untrusted-workspace refusal: text and exit 0), bad-resume (a
// --resume id is "not found"). STANDIN_RECORD names a file where it writes
// its arguments, working directory, prompt and MCP config as JSON.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// record is what STANDIN_RECORD receives.
type record struct {
	Args    []string        `json:"args"`
	Cwd     string          `json:"cwd"`
	Prompt  string          `json:"prompt"`
	Model   string          `json:"model"`
	Resume  string          `json:"resume"`
	MCPJSON json.RawMessage `json:"mcp_json"`
}

type server struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("2026.01.01-standin")
		return
	}
	var (
		print, force     bool
		format, resume   string
		model, workspace string
		prompt           []string
	)
	args := os.Args[1:]
	value := func(i *int) string {
		if *i+1 >= len(args) {
			die(1, "error: option '%s' argument missing", args[*i])
		}
		*i++
		return args[*i]
	}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "-p", "--print":
			print = true
		case "-f", "--force", "--yolo":
			force = true
		case "--approve-mcps", "--trust":
		case "--output-format":
			format = value(&i)
		case "--resume":
			resume = value(&i)
		case "--model":
			model = value(&i)
		case "--workspace":
			workspace = value(&i)
		default:
			if len(a) > 0 && a[0] == '-' {
				die(1, "error: unknown option '%s'", a)
			}
			prompt = append(prompt, a)
		}
	}
	if !print || !force || format != "stream-json" || len(prompt) != 1 {
		die(2, "stand-in: want -p --force --output-format stream-json and one prompt, got %q", args)
	}
	if workspace == "" {
		workspace, _ = os.Getwd()
	}
	cwd, _ := os.Getwd()
	mcpJSON, _ := os.ReadFile(workspace + "/.cursor/mcp.json")
	if path := os.Getenv("STANDIN_RECORD"); path != "" {
		b, _ := json.Marshal(record{Args: args, Cwd: cwd, Prompt: prompt[0], Model: model, Resume: resume, MCPJSON: json.RawMessage(orNull(mcpJSON))})
		if err := os.WriteFile(path, b, 0o600); err != nil {
			die(1, "stand-in: %v", err)
		}
	}
	mode := os.Getenv("STANDIN_MODE")
	switch {
	case mode == "fail":
		die(3, "Error: invalid API key")
	case mode == "no-result":
		fmt.Println("⚠ Workspace Trust Required")
		fmt.Println("Pass --trust, --yolo, or -f if you trust this directory")
		return
	case mode == "bad-resume" && resume != "":
		die(1, "Error: chat %s not found", resume)
	}

	session := resume
	if session == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		session = "chat-" + hex.EncodeToString(b)
	}
	start := time.Now()
	emit(map[string]any{"type": "system", "subtype": "init", "apiKeySource": "env", "cwd": workspace,
		"session_id": session, "model": cmp.Or(model, "Auto"), "permissionMode": "default"})
	emit(map[string]any{"type": "user", "message": text("user", prompt[0]), "session_id": session})
	fmt.Fprintln(os.Stderr, "stand-in: workspace", workspace)
	if mode == "hang" {
		time.Sleep(time.Hour) // until the backend kills it
	}
	if mode == "error-result" {
		emit(map[string]any{"type": "result", "subtype": "error", "is_error": true, "duration_ms": 1,
			"result": "model quota exceeded", "session_id": session})
		return
	}

	n := 0
	if m := regexp.MustCompile(`## Inbox \((\d+) message`).FindStringSubmatch(prompt[0]); m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	final := "Nothing to do."
	if n > 0 {
		var cfg struct {
			MCPServers map[string]server `json:"mcpServers"`
		}
		if err := json.Unmarshal(mcpJSON, &cfg); err != nil {
			die(1, "stand-in: no usable %s/.cursor/mcp.json: %v", workspace, err)
		}
		daemon, ok := cfg.MCPServers["agent-worker"]
		if !ok {
			die(1, "stand-in: mcp.json has no agent-worker server")
		}
		msg := fmt.Sprintf("cursor stand-in handled %d message(s)", n)
		emit(map[string]any{"type": "assistant", "message": text("assistant", "I'll reply in the channel."),
			"session_id": session, "model_call_id": "mc-1"})
		mcpArgs := map[string]any{"name": "agent-worker-channel_send", "args": map[string]any{"message": msg},
			"toolCallId": "call_1", "providerIdentifier": "agent-worker", "toolName": "channel_send"}
		emit(map[string]any{"type": "tool_call", "subtype": "started", "call_id": "call_1",
			"tool_call": map[string]any{"mcpToolCall": map[string]any{"args": mcpArgs}}, "session_id": session})
		out, isErr := call(daemon, "channel_send", map[string]any{"message": msg})
		emit(map[string]any{"type": "tool_call", "subtype": "completed", "call_id": "call_1",
			"tool_call": map[string]any{"mcpToolCall": map[string]any{"args": mcpArgs, "result": map[string]any{
				"success": map[string]any{"content": []any{map[string]any{"text": map[string]any{"text": out}}}, "isError": isErr}}}},
			"session_id": session})
		final = "Replied to the team."
	}
	emit(map[string]any{"type": "assistant", "message": text("assistant", final), "session_id": session})
	ms := time.Since(start).Milliseconds()
	emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "duration_ms": ms,
		"duration_api_ms": ms, "result": final, "session_id": session, "request_id": "req-1"})
}

// call calls one tool of an MCP server over streamable HTTP with the
// server's headers, as cursor-agent does.
func call(s server, tool string, args map[string]any) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hc := &http.Client{Transport: headers{s.Headers}}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "cursor-agent-standin", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		die(1, "stand-in: connect to %s: %v", s.URL, err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		die(1, "stand-in: %s: %v", tool, err)
	}
	out := ""
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			out += t.Text
		}
	}
	return out, res.IsError
}

type headers struct{ h map[string]string }

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func text(role, s string) map[string]any {
	return map[string]any{"role": role, "content": []any{map[string]any{"type": "text", "text": s}}}
}

func emit(v any) {
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

func die(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(code)
}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}
