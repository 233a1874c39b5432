package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
)

func TestE2ESendPeekAndDocs(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	// External members: the daemon never runs them, so their inboxes stay
	// as the messages left them.
	c.ok("new", "alice", "--backend", "external")
	c.ok("new", "bob", "--backend", "external")
	if out := c.ok("send", "bob", "please review"); !strings.Contains(out, "→ @bob") {
		t.Errorf("send printed %q", out)
	}
	c.ok("send", "@global", "hello @alice and @bob")
	c.ok("send", "@global", "just for bob", "--to", "bob")
	out := c.ok("peek")
	for _, want := range []string{"[user] @bob please review", "[user] hello @alice and @bob", "[user → bob, DM] just for bob"} {
		if !strings.Contains(out, want) {
			t.Errorf("peek output lacks %q:\n%s", want, out)
		}
	}
	if out := c.ok("peek", "alice"); strings.Contains(out, "just for bob") {
		t.Errorf("peek as alice shows bob's DM:\n%s", out)
	}
	var l api.MessageList
	if err := json.Unmarshal([]byte(c.ok("peek", "-n", "2", "--json")), &l); err != nil || len(l.Messages) != 2 {
		t.Errorf("peek -n 2 --json = %+v, %v", l, err)
	}
	var a api.Agent
	json.Unmarshal([]byte(c.ok("info", "bob", "--json")), &a)
	if a.InboxDepth != 3 {
		t.Errorf("bob's inbox depth = %d, want 3", a.InboxDepth)
	}

	c.ok("doc", "write", "# Notes")
	c.ok("doc", "append", "@global", "\n- more")
	if out := c.ok("doc", "read"); out != "# Notes\n- more\n" {
		t.Errorf("doc read = %q", out)
	}
	from := filepath.Join(t.TempDir(), "plan.md")
	os.WriteFile(from, []byte("the plan"), 0o600)
	c.ok("doc", "write", "--file", "plan.md", "--from", from)
	if out := c.ok("doc", "list"); !strings.Contains(out, "notes.md") || !strings.Contains(out, "plan.md") {
		t.Errorf("doc list = %q", out)
	}
	if b, err := os.ReadFile(filepath.Join(c.home, ".workflow", "global", "main", "documents", "plan.md")); err != nil || string(b) != "the plan" {
		t.Errorf("plan.md on disk = %q, %v", b, err)
	}

	for name, tc := range map[string]struct {
		args []string
		code int
		says string
	}{
		"unknown agent":  {[]string{"send", "nobody", "hi"}, api.ExitNotFound, "not found"},
		"dm to stranger": {[]string{"send", "@global", "hi", "--to", "zed"}, api.ExitUsage, "not a member"},
		"traversal":      {[]string{"doc", "read", "--file", "../../etc/passwd.md"}, api.ExitUsage, ".."},
		"no content":     {[]string{"doc", "write"}, api.ExitUsage, "missing content"},
		"unknown scope":  {[]string{"peek", "@nowhere"}, api.ExitNotFound, "not found"},
		"no proposals":   {[]string{"proposals", "@nowhere"}, api.ExitNotFound, `workflow "nowhere:main" not found`},
		"bad -n":         {[]string{"peek", "-n", "0"}, api.ExitUsage, "-n"},
	} {
		r := c.run(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("%s: agent-worker %v: exit %d, stderr %q; want %d saying %q", name, tc.args, r.code, r.stderr, tc.code, tc.says)
		}
	}
}

func TestE2EPeekFollow(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("new", "alice", "--backend", "mock")
	c.ok("send", "alice", "before")
	// alice may already have answered, so the tail holds more than "before".
	cmd := exec.Command(binary, "peek", "--follow", "-n", "2")
	cmd.Env = c.env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("peek --follow ended: %v", lines.Err())
		}
		return lines.Text()
	}
	if l := next(); !strings.Contains(l, "@alice before") {
		t.Errorf("first line %q, want the user's message", l)
	}
	c.ok("send", "alice", "after")
	// Run lines ("~ alice is working") may come between messages.
	for l := next(); !strings.Contains(l, "@alice after"); l = next() {
		if !strings.HasPrefix(l, "   ~ ") && !strings.Contains(l, "[alice]") {
			t.Errorf("unexpected followed line %q", l)
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("peek --follow after Ctrl-C: %v", err)
	}
}

// An outside agent joins the team with the config mcp-config prints.
func TestE2EOutsideAgentJoinsWithMCPConfig(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("new", "me", "--backend", "external")
	c.ok("new", "bob", "--backend", "mock")
	var cfg struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(c.ok("mcp-config", "me")), &cfg); err != nil {
		t.Fatal(err)
	}
	srv := cfg.MCPServers["agent-worker"]
	if srv.Type != "http" || !strings.HasSuffix(srv.URL, "/mcp") || !strings.HasPrefix(srv.Headers["Authorization"], "Bearer awt_") {
		t.Fatalf("mcp-config = %+v", cfg)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "outside", Version: "1"}, nil)
	hc := &http.Client{Transport: headerRT{srv.Headers}}
	sess, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "channel_send", Arguments: map[string]any{"message": "@bob hi from outside"}})
	if err != nil || res.IsError {
		t.Fatalf("channel_send: %v %+v", err, res)
	}
	if out := c.ok("peek"); !strings.Contains(out, "[me] @bob hi from outside") {
		t.Errorf("peek = %q", out)
	}
	if out := c.ok("mcp-config", "me", "--format", "codex"); !strings.Contains(out, "[mcp_servers.agent-worker]") || !strings.Contains(out, "bearer_token_env_var") {
		t.Errorf("codex format = %q", out)
	}
	if r := c.run("mcp-config", "ghost"); r.code != api.ExitNotFound {
		t.Errorf("mcp-config for an unknown agent: exit %d", r.code)
	}
}

type headerRT struct{ h map[string]string }

// ownTransport is the tests' own: httptest.Server.Close of a parallel
// test closes http.DefaultTransport's idle connections, a live MCP
// session's among them.
var ownTransport = http.DefaultTransport.(*http.Transport).Clone()

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	return ownTransport.RoundTrip(r)
}
