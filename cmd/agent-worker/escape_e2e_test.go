package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
)

// escapeFixture is a daemon with one agent, a documents folder holding
// symlinks that lead outside it, and an outside folder whose files must stay
// untouched.
type escapeFixture struct {
	c       *cli
	docs    string // the standalone scope's documents folder
	outside string // a folder outside it, with secret.md
	secret  string
}

const (
	secretText = "the outside file's own text"
	pwned      = "PWNED by a path escape"
)

func newEscapeFixture(t *testing.T) *escapeFixture {
	t.Helper()
	c := newCLI(t)
	c.startDaemon()
	c.ok("new", "alice", "--backend", "external")
	c.ok("doc", "write", "# Notes") // creates the documents folder
	f := &escapeFixture{c: c, docs: filepath.Join(c.home, ".workflow", "global", "main", "documents"), outside: t.TempDir()}
	f.secret = filepath.Join(f.outside, "secret.md")
	writeFile(t, f.secret, secretText)
	for link, target := range map[string]string{
		"leak.md":     f.secret,                               // a symlinked file leaving the folder
		"out":         f.outside,                              // a symlinked folder leaving it
		"dangling.md": filepath.Join(f.outside, "missing.md"), // a link to a file that does not exist yet
	} {
		if err := os.Symlink(target, filepath.Join(f.docs, link)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// checkUntouched fails if any file outside the documents folder (the
// outside folder, the rest of the daemon's .workflow tree, the home)
// received the attack's text, or the outside file changed.
func (f *escapeFixture) checkUntouched(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(f.secret); err != nil || string(b) != secretText {
		t.Errorf("outside file now %q, %v", b, err)
	}
	for _, p := range []string{filepath.Join(f.outside, "missing.md"), filepath.Join(f.outside, "new.md"), filepath.Join(f.outside, "abs.md")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created outside the documents folder", p)
		}
	}
	for _, root := range []string{f.outside, filepath.Join(f.c.home, ".workflow"), f.c.home} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 || strings.HasSuffix(p, ".db") || strings.Contains(p, ".db-") {
				return nil
			}
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(pwned)) {
				t.Errorf("%s holds text written through a path escape", p)
			}
			return nil
		})
	}
	// The links are the user's: still there, still links.
	for _, link := range []string{"leak.md", "out", "dangling.md"} {
		if fi, err := os.Lstat(filepath.Join(f.docs, link)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("the user's symlink %s was replaced or removed: %v", link, err)
		}
	}
}

// escapes are document names that try to leave the documents folder, as
// they reach the daemon once URL-decoded (HTTP) or as a tool argument
// (MCP), and what the refusal must say.
func (f *escapeFixture) escapes() map[string]struct{ name, says string } {
	return map[string]struct{ name, says string }{
		"dot-dot":          {"../escape.md", `".."`},
		"dot-dot deeper":   {"sub/../../escape.md", `".."`},
		"dot-dot to home":  {"../../../../agent-worker.md", `".."`},
		"absolute":         {filepath.Join(f.outside, "abs.md"), "absolute"},
		"backslash":        {`..\escape.md`, `contains "\\"`},
		"encoded dot-dot":  {"%2e%2e/escape.md", `contains "%"`}, // arrives still encoded: a literal '%'
		"symlinked file":   {"leak.md", "outside the documents folder"},
		"symlinked folder": {"out/new.md", "outside the documents folder"},
		"dangling link":    {"dangling.md", "symlink"},
	}
}

// Invariant 9 through the real HTTP API: every path escape is refused with
// an error that says why, for read, write, create and append, whether the
// escape is written plainly or URL-encoded (%2e%2e, %2F); nothing outside
// the documents folder is read or written.
func TestE2EDocPathEscapesRefusedOverHTTP(t *testing.T) {
	t.Parallel()
	f := newEscapeFixture(t)
	d, err := api.ReadDaemonInfo(f.c.home)
	if err != nil {
		t.Fatal(err)
	}
	// A client that shows the daemon's own answer, redirects included.
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, rawPath string, body any) (int, string, http.Header) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, d.URL(), rd)
		if err != nil {
			t.Fatal(err)
		}
		// Opaque keeps the path byte for byte as written here.
		req.URL.Opaque = "//" + req.URL.Host + rawPath
		req.Header.Set("Authorization", "Bearer "+d.Token)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, rawPath, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: read the answer: %v", method, rawPath, err)
		}
		return resp.StatusCode, string(b), resp.Header
	}
	ops := map[string]struct {
		method string
		body   any
	}{
		"read":   {http.MethodGet, nil},
		"write":  {http.MethodPut, api.DocumentWrite{Content: pwned}},
		"create": {http.MethodPut, api.DocumentWrite{Content: pwned, Create: true}},
		"append": {http.MethodPost, api.DocumentWrite{Content: pwned}},
	}
	// Each name as the api client sends it (one segment, '/' as %2F), with
	// its dots escaped too (%2e, %2E with %2f), and with plain slashes.
	for name, tc := range f.escapes() {
		oneSegment := url.PathEscape(tc.name)
		for enc, p := range map[string]string{
			"%2F":    oneSegment,
			"%2e%2F": strings.ReplaceAll(oneSegment, ".", "%2e"),
			"%2E%2f": strings.ReplaceAll(strings.ReplaceAll(oneSegment, ".", "%2E"), "%2F", "%2f"),
			"plain":  strings.ReplaceAll(oneSegment, "%2F", "/"),
		} {
			for op, o := range ops {
				raw := "/docs/global/main/" + p
				code, body, hdr := do(o.method, raw, o.body)
				says := tc.says
				if enc == "plain" && (strings.Contains(tc.name, "..") && !strings.Contains(tc.name, `\`) || strings.HasPrefix(tc.name, "/")) {
					// Plain dot segments and a double slash are resolved by
					// the URL layer before any route (RFC 3986, as HTTP
					// clients do before sending): the daemon redirects to
					// the resolved URL, which names no file outside (or
					// refuses the request outright).
					if code == http.StatusTemporaryRedirect {
						if loc := hdr.Get("Location"); strings.Contains(loc, "..") || strings.Contains(loc, "//") {
							t.Errorf("%s %s (%s): redirected to %q", op, raw, name, loc)
						}
						continue
					}
					says = ""
				}
				var e api.Error
				if code < 400 || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Message, says) {
					t.Errorf("%s %s (%s, %s): %d %s; want a JSON error saying %s", op, raw, name, enc, code, body, says)
				}
			}
		}
	}
	// A name that leaves the documents folder is refused in the CLI too,
	// with the daemon's message.
	r := f.c.run("doc", "write", "--file", "out/new.md", pwned)
	if r.code == 0 || !strings.Contains(r.stderr, "outside the documents folder") {
		t.Errorf("doc write --file out/new.md: exit %d, stderr %q", r.code, r.stderr)
	}
	// The listing skips links that leave the folder.
	code, body, _ := do(http.MethodGet, "/docs/global/main", nil)
	if code != 200 || strings.Contains(body, "leak.md") || strings.Contains(body, "new.md") || !strings.Contains(body, "notes.md") {
		t.Errorf("GET /docs/global/main = %d %s", code, body)
	}
	f.checkUntouched(t)
}

// Invariant 9 through the MCP tools an agent has: team_doc_read, _write,
// _append and _create refuse every escape with a tool error saying why;
// resource ids are not paths either.
func TestE2EDocPathEscapesRefusedOverMCP(t *testing.T) {
	t.Parallel()
	f := newEscapeFixture(t)
	sess := f.c.mcpSession("alice")
	call := func(tool string, args map[string]any) (bool, string) {
		t.Helper()
		res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s %v: %v", tool, args, err)
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return res.IsError, text.String()
	}
	for name, tc := range f.escapes() {
		for tool, args := range map[string]map[string]any{
			"team_doc_read":   {"file": tc.name},
			"team_doc_write":  {"file": tc.name, "content": pwned},
			"team_doc_append": {"file": tc.name, "content": pwned},
			"team_doc_create": {"file": tc.name, "content": pwned},
		} {
			isErr, text := call(tool, args)
			if !isErr || !strings.Contains(text, tc.says) {
				t.Errorf("%s %q (%s): error=%v %q; want an error saying %s", tool, tc.name, name, isErr, text, tc.says)
			}
		}
	}
	for _, id := range []string{"../../agent-worker.db", "/etc/passwd", "res_../../x"} {
		if isErr, text := call("resource_read", map[string]any{"id": id}); !isErr || !strings.Contains(text, "not a resource id") {
			t.Errorf("resource_read %q: error=%v %q", id, isErr, text)
		}
	}
	// The agent still works inside the folder.
	if isErr, text := call("team_doc_create", map[string]any{"file": "specs/api.md", "content": "inside"}); isErr {
		t.Errorf("team_doc_create specs/api.md: %s", text)
	}
	if b, err := os.ReadFile(filepath.Join(f.docs, "specs", "api.md")); err != nil || string(b) != "inside" {
		t.Errorf("specs/api.md = %q, %v", b, err)
	}
	f.checkUntouched(t)
}

// mcpEndpoint is the MCP URL and an HTTP client carrying the token
// `mcp-config agent` mints, as an outside MCP client would use them.
func (c *cli) mcpEndpoint(agent string) (string, *http.Client) {
	c.t.Helper()
	var cfg struct {
		MCPServers map[string]struct {
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(c.ok("mcp-config", agent)), &cfg); err != nil {
		c.t.Fatal(err)
	}
	srv := cfg.MCPServers["agent-worker"]
	return srv.URL, &http.Client{Transport: headerRT{srv.Headers}}
}

// mcpSession opens an MCP session as agent, closed when the test ends.
func (c *cli) mcpSession(agent string) *mcp.ClientSession {
	c.t.Helper()
	endpoint, hc := c.mcpEndpoint(agent)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	sess, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		c.t.Fatalf("connect to %s as %s: %v", endpoint, agent, err)
	}
	c.t.Cleanup(func() { sess.Close() })
	return sess
}
