package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// tsCallScript calls one tool with the official TypeScript MCP client as
// the agent whose token it is given, and prints the result.
const tsCallScript = `import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
const [url, token, name, args] = process.argv.slice(2);
const client = new Client({ name: "search-e2e", version: "1" });
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer " + token } } }));
const res = await client.callTool({ name, arguments: JSON.parse(args) });
console.log(JSON.stringify(res));
await client.close();
`

// tsSearch calls team_search with the TypeScript client.
func tsSearch(t *testing.T, mcpURL, token, query string) (text string, structured map[string]any, isError bool) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"query": query})
	return tsCall(t, mcpURL, token, "team_search", string(args))
}

// tsCall runs tsCallScript with the official TypeScript MCP SDK from
// AGENT_WORKER_E2E_NODE_MODULES, where make test-e2e installs it (then a
// missing SDK or node fails the test); without it, from where make bench
// installs it, or the test skips.
func tsCall(t *testing.T, mcpURL, token, tool, args string) (text string, structured map[string]any, isError bool) {
	t.Helper()
	modules := tsModules(t)
	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "search.mjs")
	if err := os.WriteFile(script, []byte(tsCallScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", script, mcpURL, token, tool, args).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%s result %s: %v", tool, out, err)
	}
	for _, c := range res.Content {
		text += c.Text
	}
	return text, res.StructuredContent, res.IsError
}

// A real daemon indexes what its team writes and finds it by stemmed
// words: a message, a document, a transcript line; a direct message only
// for its sender, its recipient and the owner; through the CLI, HTTP and
// the official TypeScript MCP client. A malformed query is a 400 / exit 2
// that says what is wrong.
func TestE2ESearch(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, name := range []string{"alice", "bob", "carol"} {
		c.ok("new", name, "--backend", "external")
	}
	c.ok("new", "worker", "--backend", "mock", "--config", `{"script":[{"text":"checking the flaky kangaroo tests"},{"result":"all green"}]}`)
	c.ok("send", "@global", "the database migration is finished")
	c.ok("doc", "write", "@global", "--file", "plan.md", "We ship the quarterly roadmap on Friday.")
	c.ok("serve", "worker", "go")

	tokens := map[string]string{}
	var mcpURL string
	for _, name := range []string{"alice", "bob", "carol"} {
		var cfg struct {
			MCPServers map[string]struct {
				URL     string            `json:"url"`
				Headers map[string]string `json:"headers"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(c.ok("mcp-config", name)), &cfg); err != nil {
			t.Fatal(err)
		}
		srv := cfg.MCPServers["agent-worker"]
		mcpURL, tokens[name] = srv.URL, strings.TrimPrefix(srv.Headers["Authorization"], "Bearer ")
	}
	// alice's DM to bob, sent over MCP.
	text, _, isErr := tsCall(t, mcpURL, tokens["alice"], "channel_send", `{"message":"the payroll password rotates tonight","to":"bob"}`)
	if isErr {
		t.Fatalf("channel_send: %s", text)
	}

	// The CLI, as the owner.
	out := c.ok("search", "@global", "migrating")
	if !strings.Contains(out, "message #") || !strings.Contains(out, "«migration»") || !strings.Contains(out, "agent-worker peek @global:main") {
		t.Errorf("search migrating:\n%s", out)
	}
	out = c.ok("search", "@global", `"quarterly roadmap"`)
	if !strings.Contains(out, "document plan.md") || !strings.Contains(out, "agent-worker doc read @global:main --file plan.md") {
		t.Errorf("search a phrase of a document:\n%s", out)
	}
	out = c.ok("search", "@global", "kangaroo", "--kind", "run")
	if !strings.Contains(out, "run run_") || !strings.Contains(out, "«kangaroo»") || !strings.Contains(out, "agent-worker logs run_") {
		t.Errorf("search a transcript:\n%s", out)
	}
	if out := c.ok("search", "@global", "payroll"); !strings.Contains(out, "→ bob (direct)") {
		t.Errorf("the owner does not find the DM:\n%s", out)
	}
	if out := c.ok("search", "carol", "payroll"); !strings.Contains(out, "no matches") {
		t.Errorf("carol finds alice's DM to bob:\n%s", out)
	}
	var res api.SearchResult
	if err := json.Unmarshal([]byte(c.ok("search", "bob", "payroll", "--json")), &res); err != nil || len(res.Hits) != 1 || res.Hits[0].To != "bob" {
		t.Errorf("bob's search --json: %+v, %v", res, err)
	}
	r := c.run("search", "@global", `"unclosed`)
	if r.code != 2 || !strings.Contains(r.stderr, "unclosed quote") {
		t.Errorf("malformed query: exit %d, stderr %q; want 2 and the reason", r.code, r.stderr)
	}

	// HTTP.
	info, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatal(err)
	}
	get := func(q string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, info.URL()+"/search/global/main?q="+url.QueryEscape(q), nil)
		req.Header.Set("Authorization", "Bearer "+info.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("migrating"); code != 200 || !strings.Contains(body, `"kind":"message"`) || !strings.Contains(body, "«migration»") {
		t.Errorf("GET /search migrating: %d %s", code, body)
	}
	if code, body := get("a*b"); code != 400 || !strings.Contains(body, "may only end a word") || !strings.Contains(body, `"code":"invalid"`) {
		t.Errorf("GET /search a*b: %d %s; want 400 with the reason", code, body)
	}

	// MCP, with the official TypeScript client.
	if text, sc, isErr := tsSearch(t, mcpURL, tokens["bob"], "payroll"); isErr || !strings.Contains(text, "«payroll»") || sc["count"] != float64(1) {
		t.Errorf("bob's team_search payroll: %s %v", text, sc)
	}
	if text, sc, isErr := tsSearch(t, mcpURL, tokens["carol"], "payroll"); isErr || sc["count"] != float64(0) {
		t.Errorf("carol's team_search finds the DM: %s %v", text, sc)
	}
	if text, _, isErr := tsSearch(t, mcpURL, tokens["carol"], "migrating"); isErr || !strings.Contains(text, "«migration»") {
		t.Errorf("carol's team_search migrating: %s", text)
	}
	if text, _, isErr := tsSearch(t, mcpURL, tokens["carol"], `"unclosed`); !isErr || !strings.Contains(text, "unclosed quote") {
		t.Errorf("a malformed query over MCP: error %v, %s", isErr, text)
	}
}
