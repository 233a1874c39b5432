package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/certs"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// TLSConfig is how the daemon encrypts its HTTP API (and MCP server and
// console): off when zero, Auto for a self-signed certificate kept in the
// home (clients pin its fingerprint), or the user's CertFile and KeyFile.
type TLSConfig struct {
	Auto     bool
	CertFile string
	KeyFile  string
}

// On says whether the daemon serves HTTPS.
func (c TLSConfig) On() bool { return c.Auto || c.CertFile != "" || c.KeyFile != "" }

// checkListen refuses a configuration that would expose the API, and
// warns of one that exposes it unencrypted on purpose.
func checkListen(cfg Config) error {
	switch t := cfg.TLS; {
	case (t.CertFile == "") != (t.KeyFile == ""):
		return api.Errorf(api.CodeInvalid, "--tls-cert and --tls-key go together: give both files (the certificate and its private key), or --tls auto")
	case t.Auto && t.CertFile != "":
		return api.Errorf(api.CodeInvalid, "--tls auto makes its own certificate: give it or --tls-cert/--tls-key, not both")
	case t.On() && cfg.InsecureHTTP:
		return api.Errorf(api.CodeInvalid, "--insecure-http says the API is plain HTTP, but --tls turns HTTPS on: give one of them")
	}
	remote := reachableFromOutside(cfg.Listen)
	switch {
	case remote && !cfg.AllowRemote:
		return api.Errorf(api.CodeInvalid, "--listen %s is reachable from other machines, and the API gives whoever has the daemon's token full control "+
			"(agents run commands on this machine): listen on 127.0.0.1, or add --allow-remote with --tls auto or --tls-cert/--tls-key "+
			"(or --insecure-http if this network is trusted or a TLS proxy fronts it)", cfg.Listen)
	case cfg.AllowRemote && !cfg.TLS.On() && !cfg.InsecureHTTP:
		return api.Errorf(api.CodeInvalid, "--allow-remote would send the daemon's token, which gives full control of this machine's agents, unencrypted: "+
			"add --tls auto (a self-signed certificate that clients pin) or --tls-cert FILE --tls-key FILE, "+
			"or --insecure-http if this network is trusted or a TLS proxy fronts it")
	case remote && cfg.InsecureHTTP:
		cfg.Logger.Warn("the HTTP API is reachable from other machines unencrypted (--allow-remote --insecure-http): whoever has the token controls the daemon and the traffic can be read; put it behind TLS or a trusted network", "listen", cfg.Listen)
	case remote:
		cfg.Logger.Info("the HTTP API is reachable from other machines over HTTPS (--allow-remote): whoever has the token controls the daemon", "listen", cfg.Listen)
	}
	return nil
}

// loadCert gives the daemon its certificate, when it serves HTTPS.
func (h *Host) loadCert() error {
	t := h.cfg.TLS
	switch {
	case t.CertFile != "":
		c, err := certs.Load(t.CertFile, t.KeyFile)
		if err != nil {
			return err
		}
		h.cert = c
	case t.Auto:
		host, _, err := net.SplitHostPort(h.cfg.Listen)
		if err != nil {
			return api.Errorf(api.CodeInvalid, "--listen %s: %w", h.cfg.Listen, err)
		}
		c, why, err := certs.Auto(h.cfg.Home, host, h.cfg.Now())
		if err != nil {
			return err
		}
		if why != "" {
			h.log.Warn("made a new self-signed TLS certificate: clients that pinned the old fingerprint must pin this one", "why", why,
				"fingerprint", c.Info.Fingerprint, "file", c.Info.CertFile)
		}
		h.cert = c
	default:
		return nil
	}
	h.log.Info("serving HTTPS", "fingerprint", h.cert.Info.Fingerprint, "self_signed", h.cert.Info.SelfSigned,
		"expires", h.cert.Info.NotAfter.Format(time.DateOnly))
	return nil
}

// listenForRuns opens, when the API is HTTPS, the loopback-only plain HTTP
// listener that runs reach the MCP server on: every backend's CLI can
// connect without being taught to trust the certificate, and a run's
// token never leaves the machine. It serves /mcp and nothing else.
func (h *Host) listenForRuns(handler http.Handler, errLog hclog.Logger) error {
	if h.cert == nil {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		var err6 error
		if ln, err6 = net.Listen("tcp", "[::1]:0"); err6 != nil {
			return fmt.Errorf("listen on loopback for runs: %w", errors.Join(err, err6))
		}
	}
	h.runsLn = ln
	h.runsSrv = &http.Server{
		Handler:           mcpOnly(handler, h.Info),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          errLog.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
	}
	return nil
}

// mcpOnly lets through to next only the MCP endpoint: the loopback
// listener is for runs, and every other route is at the HTTPS address.
func mcpOnly(next http.Handler, info func() api.DaemonInfo) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" || r.URL.Path == "/mcp"+tools.GatePath {
			next.ServeHTTP(w, r)
			return
		}
		e := api.Errorf(api.CodeNotFound, "this loopback address serves the runs' MCP (/mcp) only: the daemon's API is at %s", info().URL())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(api.HTTPStatus(e.Code))
		_ = json.NewEncoder(w).Encode(e)
	})
}

// runsMCPURL is the MCP address handed to runs: the loopback listener
// when the API is HTTPS, else the API's own.
func (h *Host) runsMCPURL() string {
	if h.runsLn != nil {
		return "http://" + h.runsLn.Addr().String() + "/mcp"
	}
	return h.Info().URL() + "/mcp"
}

// advertised is the address this member publishes to its cluster: a URL
// when it serves HTTPS, so that status says how to reach it.
func (h *Host) advertised() string {
	addr := h.ln.Addr().String()
	if h.cert != nil {
		return "https://" + addr
	}
	return addr
}

// withTLS adds the scheme and the certificate to what clients are told.
func (h *Host) withTLS(d api.DaemonInfo) api.DaemonInfo {
	if h.cert != nil {
		info := h.cert.Info
		d.Scheme, d.TLS = "https", &info
	}
	return d
}

// serve serves the API on its listener, over TLS when it has a
// certificate (HTTP/2 included).
func (h *Host) serve() error {
	if h.cert != nil {
		return h.srv.ServeTLS(h.ln, "", "") // the certificate is in TLSConfig
	}
	return h.srv.Serve(h.ln)
}
