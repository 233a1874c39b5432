package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/api"
)

// pinnedHTTP is an HTTP client that checks the daemon's certificate as
// the CLI does (api.ClientTLS), sending headers with every request and
// following no redirect.
func pinnedHTTP(d api.DaemonInfo, headers map[string]string) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = api.ClientTLS(d)
	return &http.Client{
		Transport:     headerTransport{headers, t},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type headerTransport struct {
	h    map[string]string
	next http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}

// A daemon with --tls auto (here from AGENT_WORKER_TLS) serves HTTPS: status
// shows the fingerprint daemon.json pins, the CLI works, a mock agent's
// run still reaches the MCP server, an outside MCP client and the console
// link use https; plain HTTP and a client that does not pin are refused,
// and so is a wrong pin; a restart keeps the certificate.
func TestE2ETLSAuto(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.startDaemon("AGENT_WORKER_TLS=auto")
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatal(err)
	}
	if d.Scheme != "https" || d.TLS == nil || !d.TLS.SelfSigned || d.TLS.Fingerprint == "" {
		t.Fatalf("daemon.json = %+v; want https with the certificate's fingerprint", d)
	}
	fp := d.TLS.Fingerprint
	if st, err := os.Stat(d.TLS.CertFile); err != nil || !strings.HasPrefix(d.TLS.CertFile, c.home) {
		t.Errorf("certificate file %s: %v; want it in the home", d.TLS.CertFile, err)
	} else if key, err := os.Stat(strings.TrimSuffix(d.TLS.CertFile, "cert.pem") + "key.pem"); err != nil || key.Mode().Perm() != 0o600 {
		t.Errorf("key beside %s (%v): %v; want mode 0600", d.TLS.CertFile, st.Mode(), err)
	}

	status := c.ok("status")
	if !strings.Contains(status, "https://127.0.0.1:"+strconv.Itoa(d.Port)) || !strings.Contains(status, "tls:       sha256 "+fp) {
		t.Errorf("status does not show the https address and the fingerprint %s:\n%s", fp, status)
	}

	// A mock agent whose run calls an MCP tool: the plugin reaches the
	// daemon (over its loopback listener) while the CLI speaks https.
	script, _ := json.Marshal(map[string]any{"script": []map[string]any{
		{"tool": "channel_send", "args": map[string]any{"message": "hello over the daemon's MCP"}},
		{"result": "sent"}}})
	c.ok("new", "alice", "--backend", "mock", "--config", string(script))
	if out := c.ok("ask", "alice", "say hello"); !strings.Contains(out, "sent") {
		t.Errorf("ask = %q", out)
	}
	if out := c.ok("peek"); !strings.Contains(out, "[alice] hello over the daemon's MCP") {
		t.Errorf("the run's MCP call did not reach the channel: peek = %q", out)
	}

	base := d.URL()
	// Plain HTTP to the TLS port is refused.
	if resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(d.Port) + "/health"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "HTTPS") {
			t.Errorf("plain HTTP to the daemon = %d %s; want 400, an HTTPS server", resp.StatusCode, b)
		}
	}
	// A client that verifies the usual way (no pin) refuses the
	// self-signed certificate.
	if _, err := http.Get(base + "/health"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("GET %s without the pin = %v; want a certificate error", base, err)
	}
	// Another machine's CLI: AGENT_WORKER_URL with the right pin works, a
	// wrong one is refused (exit 1, not "no daemon"), none says how to pin.
	elsewhere := newCLI(t) // a home with no daemon.json
	remote := func(pin string) result {
		r := elsewhere.runEnv([]string{"AGENT_WORKER_URL=" + base, "AGENT_WORKER_TOKEN=" + d.Token, "AGENT_WORKER_TLS_FINGERPRINT=" + pin}, "list")
		return r
	}
	if r := remote(strings.ToLower(strings.ReplaceAll(fp, ":", ""))); r.code != 0 || !strings.Contains(r.stdout, "alice") {
		t.Errorf("list with AGENT_WORKER_TLS_FINGERPRINT: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	wrong := strings.Repeat("AB:", 31) + "AB"
	if r := remote(wrong); r.code != api.ExitError || !strings.Contains(r.stderr, "not the pinned "+wrong) || !strings.Contains(r.stderr, fp) {
		t.Errorf("list with a wrong fingerprint: exit %d, stderr %q; want %d naming both fingerprints", r.code, r.stderr, api.ExitError)
	}
	if r := remote(""); r.code != api.ExitError || !strings.Contains(r.stderr, "AGENT_WORKER_TLS_FINGERPRINT") {
		t.Errorf("list over https without a pin: exit %d, stderr %q; want refused naming AGENT_WORKER_TLS_FINGERPRINT", r.code, r.stderr)
	}

	// An outside agent: mcp-config hands out the https URL and says how to
	// trust the certificate; an MCP client that pins it works.
	c.ok("new", "me", "--backend", "external")
	r := c.run("mcp-config", "me")
	var cfg struct {
		MCPServers map[string]struct {
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &cfg) != nil {
		t.Fatalf("mcp-config: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	srv := cfg.MCPServers["agent-worker"]
	if srv.URL != base+"/mcp" || !strings.Contains(r.stderr, fp) || !strings.Contains(r.stderr, "NODE_EXTRA_CA_CERTS="+d.TLS.CertFile) {
		t.Errorf("mcp-config: url %s, stderr %q; want %s/mcp and how to trust %s", srv.URL, r.stderr, base, d.TLS.CertFile)
	}
	if out := c.ok("mcp-config", "me", "--format", "codex"); !strings.Contains(out, "CODEX_CA_CERTIFICATE="+d.TLS.CertFile) || !strings.Contains(out, `url = "`+base+`/mcp"`) {
		t.Errorf("mcp-config --format codex = %q", out)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "outside", Version: "1"}, nil)
	sess, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: pinnedHTTP(d, srv.Headers)}, nil)
	if err != nil {
		t.Fatalf("MCP over https with the pin: %v", err)
	}
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "channel_send", Arguments: map[string]any{"message": "hi over https"}})
	sess.Close()
	if err != nil || res.IsError {
		t.Fatalf("channel_send over https: %v %+v", err, res)
	}
	if out := c.ok("peek"); !strings.Contains(out, "[me] hi over https") {
		t.Errorf("peek = %q", out)
	}
	// Node (Claude Code's runtime) trusts the certificate as mcp-config says.
	if node, err := exec.LookPath("node"); err != nil {
		t.Logf("node is not installed (%v): NODE_EXTRA_CA_CERTS not tried", err)
	} else {
		js := `fetch(process.argv[1]).then(r => console.log("status " + r.status)).catch(e => { console.log("error " + (e.cause && e.cause.code)); })`
		for env, want := range map[string]string{"": "error DEPTH_ZERO_SELF_SIGNED_CERT", "NODE_EXTRA_CA_CERTS=" + d.TLS.CertFile: "status 401"} {
			cmd := exec.Command(node, "-e", js, srv.URL)
			cmd.Env = append(os.Environ(), env)
			out, _ := cmd.CombinedOutput()
			if !strings.Contains(string(out), want) {
				t.Errorf("node fetch of %s with %q = %q; want %q", srv.URL, env, out, want)
			}
		}
	}

	// The console's login link is https, and its session cookie Secure.
	var login api.ConsoleLogin
	if err := json.Unmarshal([]byte(c.ok("console", "--no-open", "--json")), &login); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(login.URL, base+"/console/login?code=") {
		t.Fatalf("console link = %s; want it under %s", login.URL, base)
	}
	resp, err := pinnedHTTP(d, nil).Get(login.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cookies := resp.Cookies(); resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].Secure {
		t.Errorf("console login over https: %d, cookies %+v; want a redirect with a Secure session cookie", resp.StatusCode, cookies)
	}

	// A restart keeps the certificate: clients' pins stay valid.
	c.ok("stop", "--all")
	c.startDaemon("AGENT_WORKER_TLS=auto")
	again, err := api.ReadDaemonInfo(c.home)
	if err != nil || again.TLS == nil || again.TLS.Fingerprint != fp {
		t.Errorf("after a restart daemon.json = %+v, %v; want the same fingerprint %s", again.TLS, err, fp)
	}
	if out := c.ok("list"); !strings.Contains(out, "alice") {
		t.Errorf("list after restart = %q", out)
	}
}

// --allow-remote without TLS is refused, naming the ways out; with
// --insecure-http it starts, and with --tls auto on every interface the
// local CLI still talks to it over https on loopback.
func TestE2EAllowRemoteNeedsTLS(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	r := c.run("daemon", "--listen", "0.0.0.0:0", "--allow-remote")
	for _, want := range []string{"--tls auto", "--tls-cert", "--tls-key", "--insecure-http"} {
		if r.code != api.ExitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("daemon --allow-remote without TLS: exit %d, stderr %q; want %d naming %s", r.code, r.stderr, api.ExitUsage, want)
		}
	}
	if _, err := api.ReadDaemonInfo(c.home); !errors.Is(err, api.ErrNoDaemon) {
		t.Fatalf("a daemon started with --allow-remote and no TLS (%v)", err)
	}
	if r := c.run("daemon", "--tls", "sometimes"); r.code != api.ExitUsage || !strings.Contains(r.stderr, "use auto") {
		t.Errorf("daemon --tls sometimes: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := c.run("daemon", "--tls-cert", "x.pem"); r.code != api.ExitUsage || !strings.Contains(r.stderr, "go together") {
		t.Errorf("daemon --tls-cert alone: exit %d, stderr %q", r.code, r.stderr)
	}

	c.startDaemonWith(nil, "--listen", "0.0.0.0:0", "--allow-remote", "--tls", "auto")
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil || d.Scheme != "https" || d.Host != "127.0.0.1" {
		t.Fatalf("daemon.json on 0.0.0.0 with TLS = %+v, %v; want https on loopback", d, err)
	}
	if out := c.ok("status"); !strings.Contains(out, "https://") {
		t.Errorf("status = %s", out)
	}
	c.ok("stop", "--all")

	insecure := newCLI(t)
	insecure.startDaemonWith(nil, "--listen", "0.0.0.0:0", "--allow-remote", "--insecure-http")
	if _, err := insecure.client().Health(context.Background()); err != nil {
		t.Errorf("daemon with --allow-remote --insecure-http does not answer: %v", err)
	}
}

// Two cluster members with --tls auto each serve the CLI and MCP over
// https with a certificate of their own (each key stays in its home):
// they publish https addresses, and a client pinned to one member's
// certificate is refused by the other.
func TestE2EClusterTLS(t *testing.T) {
	ms, _ := startCluster(t, 2, "AGENT_WORKER_TLS=auto")
	var infos [2]api.DaemonInfo
	for i, m := range ms {
		d, err := api.ReadDaemonInfo(m.home)
		if err != nil || d.Scheme != "https" || d.TLS == nil {
			t.Fatalf("member %d daemon.json = %+v, %v; want https", i, d, err)
		}
		infos[i] = d
	}
	if infos[0].TLS.Fingerprint == infos[1].TLS.Fingerprint {
		t.Errorf("both members serve the certificate %s; want one each", infos[0].TLS.Fingerprint)
	}
	status := ms[0].ok("status")
	for i, d := range infos {
		if !strings.Contains(status, "https://127.0.0.1:"+strconv.Itoa(d.Port)) {
			t.Errorf("status of member 0 does not list member %d at https://127.0.0.1:%d:\n%s", i, d.Port, status)
		}
	}

	// The CLI over https on both; a run started through one reaches MCP.
	script, _ := json.Marshal(map[string]any{"script": []map[string]any{
		{"tool": "channel_send", "args": map[string]any{"message": "hello from a member's run"}}, {"result": "sent"}}})
	ms[0].ok("new", "carol", "--backend", "mock", "--config", string(script))
	if out := ms[1].ok("ask", "carol", "go"); !strings.Contains(out, "sent") {
		t.Errorf("ask through member 1 = %q", out)
	}
	ms[1].waitFor("carol's message", func() bool { return strings.Contains(ms[0].ok("peek"), "[carol] hello from a member's run") })

	// An outside MCP client of member 1, pinned to its certificate.
	ms[1].ok("new", "me", "--backend", "external")
	var cfg api.MCPConfig
	if err := json.Unmarshal([]byte(ms[1].ok("mcp-config", "me", "--json")), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.URL != infos[1].URL()+"/mcp" || cfg.TLS == nil || cfg.TLS.Fingerprint != infos[1].TLS.Fingerprint {
		t.Fatalf("member 1's mcp-config = %+v; want its https URL and fingerprint", cfg)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "outside", Version: "1"}, nil)
	sess, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: cfg.URL,
		HTTPClient: pinnedHTTP(infos[1], map[string]string{"Authorization": "Bearer " + cfg.Token})}, nil)
	if err != nil {
		t.Fatalf("MCP over https to member 1: %v", err)
	}
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "channel_send", Arguments: map[string]any{"message": "hi member 1"}})
	sess.Close()
	if err != nil || res.IsError {
		t.Fatalf("channel_send: %v %+v", err, res)
	}
	if out := ms[0].ok("peek"); !strings.Contains(out, "[me] hi member 1") {
		t.Errorf("peek through member 0 = %q", out)
	}

	// A client pinned to member 0's certificate does not accept member 1.
	elsewhere := newCLI(t)
	env := func(d api.DaemonInfo, pin string) []string {
		return []string{"AGENT_WORKER_URL=" + d.URL(), "AGENT_WORKER_TOKEN=" + d.Token, "AGENT_WORKER_TLS_FINGERPRINT=" + pin}
	}
	if r := elsewhere.runEnv(env(infos[1], infos[1].TLS.Fingerprint), "list"); r.code != 0 || !strings.Contains(r.stdout, "carol") {
		t.Errorf("list through member 1 with its pin: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	if r := elsewhere.runEnv(env(infos[1], infos[0].TLS.Fingerprint), "list"); r.code != api.ExitError || !strings.Contains(r.stderr, "not the pinned") {
		t.Errorf("list through member 1 pinned to member 0's certificate: exit %d, stderr %q; want refused", r.code, r.stderr)
	}
}
