package host

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// --allow-remote without TLS is refused, naming every way out; the TLS
// flags must make sense together.
func TestAllowRemoteNeedsTLS(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		cfg  Config
		says []string
	}{
		"plain":            {Config{Listen: "0.0.0.0:0", AllowRemote: true}, []string{"--tls auto", "--tls-cert", "--tls-key", "--insecure-http"}},
		"loopback too":     {Config{Listen: "127.0.0.1:0", AllowRemote: true}, []string{"--tls auto", "--insecure-http"}},
		"cert alone":       {Config{TLS: TLSConfig{CertFile: "c.pem"}}, []string{"--tls-cert and --tls-key go together"}},
		"auto and cert":    {Config{TLS: TLSConfig{Auto: true, CertFile: "c.pem", KeyFile: "k.pem"}}, []string{"not both"}},
		"tls and insecure": {Config{TLS: TLSConfig{Auto: true}, InsecureHTTP: true}, []string{"--insecure-http", "give one"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.Home = t.TempDir()
			_, err := New(tc.cfg)
			if api.ErrorCode(err) != api.CodeInvalid {
				t.Fatalf("New(%+v) = %v; want invalid", tc.cfg, err)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

// With --tls auto the API is HTTPS (daemon.json says so and pins the
// certificate), and runs get the MCP server on a loopback plain HTTP
// listener that serves /mcp and nothing else.
func TestTLSAutoServesHTTPSAndRunsOnLoopback(t *testing.T) {
	t.Parallel()
	th := startHostWith(t, Config{Home: t.TempDir(), Listen: "127.0.0.1:0", TLS: TLSConfig{Auto: true}})
	info := th.Info()
	if info.Scheme != "https" || info.TLS == nil || !info.TLS.SelfSigned || !strings.HasPrefix(info.URL(), "https://") {
		t.Fatalf("daemon info = %+v; want https with the certificate", info)
	}
	h, err := th.client().Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.TLS == nil || h.TLS.Fingerprint != info.TLS.Fingerprint {
		t.Errorf("health TLS = %+v; want the fingerprint %s", h.TLS, info.TLS.Fingerprint)
	}
	runs := th.runsMCPURL()
	if !strings.HasPrefix(runs, "http://127.0.0.1:") || strings.Contains(runs, info.URL()) {
		t.Fatalf("runs' MCP URL = %s; want loopback plain HTTP on its own port", runs)
	}
	resp, err := http.Get(strings.TrimSuffix(runs, "/mcp") + "/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "MCP (/mcp) only") {
		t.Errorf("GET /health on the runs' listener = %d %s; want 404, MCP only", resp.StatusCode, b)
	}
	resp, err = http.Post(runs, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /mcp without a token on the runs' listener = %d; want 401 from the MCP server", resp.StatusCode)
	}
}
