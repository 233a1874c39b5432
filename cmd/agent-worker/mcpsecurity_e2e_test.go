package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// tsOwnerScript holds an MCP session open with the official TypeScript
// client as the agent whose token it is given, and acts on the lines it
// reads: "check" lists the tools and calls team_members, "wait" starts an
// approval_wait, "cancel" aborts it (the client sends
// notifications/cancelled), "exit" closes the session. It prints one JSON
// line per step, the session id first.
const tsOwnerScript = `import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import * as readline from "node:readline";
const [url, token] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer " + token } } });
const client = new Client({ name: "owner-e2e", version: "1" });
await client.connect(transport);
console.log(JSON.stringify({ session: transport.sessionId }));
let abort, waiting;
for await (const line of readline.createInterface({ input: process.stdin })) {
  try {
    if (line === "check") {
      const tools = await client.listTools();
      const res = await client.callTool({ name: "team_members", arguments: {} });
      console.log(JSON.stringify({ tools: tools.tools.length, isError: !!res.isError }));
    } else if (line === "wait") {
      abort = new AbortController();
      waiting = client.callTool({ name: "approval_wait", arguments: { action: "deploy to production" } }, undefined, { signal: abort.signal })
        .then(() => "answered", (e) => "rejected: " + e.message);
      console.log(JSON.stringify({ waiting: true }));
    } else if (line === "cancel") {
      abort.abort("the user pressed Esc");
      console.log(JSON.stringify({ cancelled: await waiting }));
    } else if (line === "exit") {
      await client.close();
      console.log(JSON.stringify({ closed: true }));
      process.exit(0);
    }
  } catch (e) {
    console.log(JSON.stringify({ error: String(e) }));
  }
}
`

// tsIntruderScript uses the official TypeScript client's transport with
// another agent's session id and its own token: each method's outcome,
// the HTTP status of its refusal or "ok", as one JSON object.
const tsIntruderScript = `import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
const [url, token, session] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), { sessionId: session, requestInit: { headers: { Authorization: "Bearer " + token } } });
transport.setProtocolVersion("2025-11-25");
await transport.start();
const out = {};
const outcome = async (name, fn) => {
  try { await fn(); out[name] = "ok"; } catch (e) { out[name] = e.code ?? String(e); }
};
await outcome("tools/list", () => transport.send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }));
await outcome("tools/call", () => transport.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "channel_send", arguments: { message: "I am alice" } } }));
await outcome("ping", () => transport.send({ jsonrpc: "2.0", id: 3, method: "ping" }));
await outcome("DELETE", () => transport.terminateSession());
console.log(JSON.stringify(out));
process.exit(0);
`

// tsModules is where the official TypeScript MCP SDK is, as tsCall finds
// it; the test skips (or, under make test-e2e, fails) without it.
func tsModules(t *testing.T) string {
	t.Helper()
	modules, required := os.LookupEnv("AGENT_WORKER_E2E_NODE_MODULES")
	if !required {
		cache, _ := os.UserCacheDir()
		modules = filepath.Join(cache, "agent-worker-bench", "node_modules")
	}
	missing := t.Skipf
	if required {
		missing = t.Fatalf
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not installed: the TypeScript MCP client cannot run")
	}
	if _, err := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "sdk")); err != nil {
		missing("the TypeScript MCP SDK is not in %s: make test-e2e installs it", modules)
	}
	return modules
}

// tsScript writes script beside a link to modules and returns its path.
func tsScript(t *testing.T, modules, name, script string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// tsOwner is a running tsOwnerScript.
type tsOwner struct {
	t     *testing.T
	in    io.Writer
	lines chan string
}

// step sends cmd and returns the JSON line it prints, failing after the
// test deadline.
func (o *tsOwner) step(cmd string) map[string]any {
	o.t.Helper()
	if _, err := fmt.Fprintln(o.in, cmd); err != nil {
		o.t.Fatalf("owner script %s: %v", cmd, err)
	}
	return o.next(cmd)
}

func (o *tsOwner) next(what string) map[string]any {
	o.t.Helper()
	select {
	case line, ok := <-o.lines:
		if !ok {
			o.t.Fatalf("owner script ended before %s", what)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(line), &out); err != nil {
			o.t.Fatalf("owner script %s: %q: %v", what, line, err)
		}
		if e, ok := out["error"]; ok {
			o.t.Fatalf("owner script %s: %v", what, e)
		}
		return out
	case <-time.After(testkit.Deadline):
		o.t.Fatalf("owner script: no answer to %s within %v", what, testkit.Deadline)
	}
	return nil
}

// startOwner runs tsOwnerScript as the agent of token.
func startOwner(t *testing.T, modules, url, token string) *tsOwner {
	t.Helper()
	cmd := exec.Command("node", tsScript(t, modules, "owner.mjs", tsOwnerScript), url, token)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := &tsOwner{t: t, in: in, lines: make(chan string, 16)}
	go func() {
		defer close(o.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			o.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("owner script stderr:\n%s", stderr.String())
		}
	})
	return o
}

// agentToken is the MCP URL and token `mcp-config agent` prints.
func (c *cli) agentToken(agent string) (url, token string) {
	c.t.Helper()
	var cfg api.MCPConfig
	if err := json.Unmarshal([]byte(c.ok("mcp-config", agent, "--json")), &cfg); err != nil {
		c.t.Fatal(err)
	}
	return cfg.URL, cfg.Token
}

// An MCP session belongs to the agent that opened it: with the official
// TypeScript client and with raw HTTP, another agent's token is refused on
// every method (tools/list, tools/call, ping, the GET stream, DELETE) and
// the owner's session goes on working. A call the owner cancels
// (approval_wait, answered by the daemon's fast path) stops waiting at
// once; a page of another site is refused; the API takes JSON only as
// application/json.
func TestE2EMCPSessionBelongsToItsAgent(t *testing.T) {
	t.Parallel()
	modules := tsModules(t)
	c := newCLI(t)
	c.startDaemon()
	c.ok("new", "alice", "--backend", "external")
	c.ok("new", "bob", "--backend", "external")
	url, alice := c.agentToken("alice")
	_, bob := c.agentToken("bob")

	owner := startOwner(t, modules, url, alice)
	sid, _ := owner.next("the session id")["session"].(string)
	if sid == "" {
		t.Fatal("the TypeScript client got no session id")
	}

	// bob with the TypeScript client's transport on alice's session.
	out, err := exec.Command("node", tsScript(t, modules, "intruder.mjs", tsIntruderScript), url, bob, sid).CombinedOutput()
	if err != nil {
		t.Fatalf("intruder script: %v: %s", err, out)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("intruder script: %q: %v", out, err)
	}
	for _, m := range []string{"tools/list", "tools/call", "ping", "DELETE"} {
		if got[m] != float64(http.StatusForbidden) {
			t.Errorf("TypeScript client, bob's token on alice's session: %s = %v, want 403", m, got[m])
		}
	}
	// And with raw HTTP, the GET stream included.
	for name, r := range map[string]struct{ method, body string }{
		"tools/list": {"POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`},
		"tools/call": {"POST", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"channel_send","arguments":{"message":"I am alice"}}}`},
		"ping":       {"POST", `{"jsonrpc":"2.0","id":3,"method":"ping"}`},
		"GET stream": {"GET", ""},
		"DELETE":     {"DELETE", ""},
	} {
		if code, body := testkit.MCPRequest(t, r.method, url, bob, sid, r.body); code != http.StatusForbidden {
			t.Errorf("raw HTTP, bob's token on alice's session: %s = %d %s, want 403", name, code, body)
		}
	}
	if res := owner.step("check"); res["tools"] == float64(0) || res["isError"] != false {
		t.Errorf("alice's session after bob's attempts: %v", res)
	}
	if out := c.ok("peek"); strings.Contains(out, "I am alice") {
		t.Errorf("bob posted through alice's session:\n%s", out)
	}

	// alice cancels an approval_wait: it stops waiting at once.
	owner.step("wait")
	q := c.pendingApproval("alice")
	start := time.Now()
	if res := owner.step("cancel"); !strings.Contains(fmt.Sprint(res["cancelled"]), "rejected") {
		t.Errorf("the aborted call: %v", res)
	}
	c.waitFor("the cancelled approval_wait to end", func() bool {
		for _, got := range c.questionsJSON("--all") {
			if got.ID == q.ID {
				return got.State == "cancelled"
			}
		}
		return false
	})
	t.Logf("approval_wait ended %v after the client cancelled it", time.Since(start))
	if res := owner.step("check"); res["isError"] != false {
		t.Errorf("alice's session after the cancelled call: %v", res)
	}

	// A page of another site, and JSON sent as text/plain.
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`
	if code, body := testkit.MCPRequest(t, "POST", url, alice, "", initialize, "Origin", "https://evil.example"); code != http.StatusForbidden {
		t.Errorf("initialize from a foreign Origin: %d %s, want 403", code, body)
	}
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := testkit.MCPRequest(t, "POST", url, alice, "", initialize, "Origin", d.URL()); code != http.StatusOK {
		t.Errorf("initialize from the daemon's own origin: %d %s, want 200", code, body)
	}
	req, _ := http.NewRequest("POST", d.URL()+"/send", strings.NewReader(`{"target":"@global","message":"sent as text"}`))
	req.Header.Set("Authorization", "Bearer "+d.Token)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(b), "application/json") {
		t.Errorf("POST /send as text/plain: %d %s, want 415 naming application/json", resp.StatusCode, b)
	}
	owner.step("exit")
}

// Bodies without a token are refused unread: six 48 MiB posts at once to
// /mcp grow the daemon's peak memory by far less than one of them.
func TestE2EMCPUnauthenticatedBodiesUnread(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := c.startDaemon()
	c.ok("new", "alice", "--backend", "external")
	url, _ := c.agentToken("alice")
	before := procStatus(t, daemon.Process.Pid, "VmHWM")
	const size = 48 << 20
	var wg sync.WaitGroup
	statuses := make([]string, 6)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := io.LimitReader(zeros{}, size)
			req, _ := http.NewRequest("POST", url, body)
			req.ContentLength = size
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses[i] = "error: " + err.Error()
				return
			}
			resp.Body.Close()
			statuses[i] = strconv.Itoa(resp.StatusCode)
		}()
	}
	wg.Wait()
	for _, s := range statuses {
		if s != "401" {
			t.Errorf("48 MiB without a token: %s, want 401", s)
		}
	}
	after := procStatus(t, daemon.Process.Pid, "VmHWM")
	t.Logf("daemon VmHWM %d KiB before, %d KiB after six 48 MiB bodies (%+d KiB); VmRSS now %d KiB",
		before>>10, after>>10, (after-before)>>10, procStatus(t, daemon.Process.Pid, "VmRSS")>>10)
	if after-before > 40<<20 {
		t.Errorf("the daemon's peak RSS grew by %d MiB on bodies it should not read", (after-before)>>20)
	}
}

// zeros is an endless body of '0's.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// procStatus is a size field (VmRSS, VmHWM) of /proc/<pid>/status, in
// bytes.
func procStatus(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the daemon's status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("%s line %q: %v", field, line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
