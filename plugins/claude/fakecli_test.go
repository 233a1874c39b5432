package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// fakeCLI is a stand-in for claude: this test binary, linked as "claude"
// in a temporary directory, so that the backend runs a real process
// without the real CLI.
var fakeCLI string

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "claude" {
		os.Exit(fakeClaude(os.Args[1:]))
	}
	dir, err := os.MkdirTemp("", "fake-claude-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	self, _ := os.Executable()
	fakeCLI = filepath.Join(dir, "claude")
	if err := os.Symlink(self, fakeCLI); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// knownSession is the one session the fake can resume.
const knownSession = "known-session"

// fakeClaude acts as `claude -p ... --output-format stream-json`, scripted
// by --model: "send" (the default) posts to the channel through the MCP
// config it was given and answers "done"; "hang" waits to be killed;
// "crash" exits 3 without a result; "auth" fails as a bad API key does.
// It resumes knownSession only, as the real CLI resumes only sessions it
// has. Its first stderr line reports its working directory, arguments and
// CLAUDE_CONFIG_DIR.
func fakeClaude(args []string) int {
	var mcpConfig, script, resume, prompt string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--version":
			fmt.Println("9.9.9 (Fake Claude)")
			return 0
		case a == "--mcp-config" && i+1 < len(args):
			i++
			mcpConfig = args[i]
		case a == "--resume" && i+1 < len(args):
			i++
			resume = args[i]
		case strings.HasPrefix(a, "--model="):
			script = strings.TrimPrefix(a, "--model=")
		case a == "--" && i+1 < len(args):
			prompt = args[i+1]
			i = len(args)
		}
	}
	cwd, _ := os.Getwd()
	report, _ := json.Marshal(map[string]any{"cwd": cwd, "args": args, "config_dir": os.Getenv(envConfigDir)})
	fmt.Fprintln(os.Stderr, "fake-claude "+string(report))
	out := json.NewEncoder(os.Stdout)
	emit := func(v map[string]any) { _ = out.Encode(v) }
	if resume != "" && resume != knownSession {
		msg := "No conversation found with session ID: " + resume
		fmt.Fprintln(os.Stderr, msg)
		emit(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "session_id": resume, "errors": []string{msg}})
		return 1
	}
	session := "fake-session"
	if resume != "" {
		session = resume
	}
	emit(map[string]any{"type": "system", "subtype": "init", "session_id": session, "cwd": cwd})
	switch script {
	case "hang":
		time.Sleep(time.Hour)
		return 0
	case "crash":
		fmt.Fprintln(os.Stderr, "boom: out of cheese")
		return 3
	case "auth":
		emit(map[string]any{"type": "assistant", "error": "authentication_failed",
			"message": map[string]any{"content": []any{map[string]any{"type": "text", "text": "Invalid API key · Fix external API key"}}}})
		emit(map[string]any{"type": "result", "subtype": "success", "is_error": true, "api_error_status": 401, "result": "Invalid API key · Fix external API key"})
		return 1
	}

	text := "hello from fake claude"
	if i := strings.Index(prompt, "@"); i >= 0 {
		text += " as " + strings.Fields(prompt[i:])[0]
	}
	call := map[string]any{"type": "tool_use", "id": "toolu_1", "name": "mcp__agent-worker__channel_send", "input": map[string]any{"message": text}}
	emit(map[string]any{"type": "assistant", "session_id": session, "message": map[string]any{"content": []any{call}}})
	res, err := sendThrough(mcpConfig, text)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-claude:", err)
		return 2
	}
	emit(map[string]any{"type": "user", "session_id": session, "message": map[string]any{"content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": res}}}})
	emit(map[string]any{"type": "assistant", "session_id": session, "message": map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}}})
	emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": "done", "session_id": session,
		"total_cost_usd": 0.01, "usage": map[string]any{"input_tokens": 10, "output_tokens": 2}})
	return 0
}

// sendThrough posts text with the agent-worker server of an MCP config
// file, as claude would.
func sendThrough(path, text string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var cfg struct {
		MCPServers map[string]struct {
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return "", err
	}
	s := cfg.MCPServers["agent-worker"]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := worker.Connect(ctx, backend.MCPServer{URL: s.URL, Headers: s.Headers})
	if err != nil {
		return "", err
	}
	defer c.Close()
	r, err := c.Send(ctx, text, "")
	if err != nil {
		return "", err
	}
	return r.ID, nil
}
