package httpapi

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
)

// checkJSONType refuses a JSON body sent as another media type (415). A
// web page may send text/plain or a form to any site without asking it
// first (a CORS "simple request"), but application/json only with its
// consent, which the daemon never gives: the type keeps pages out.
func checkJSONType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if t, _, err := mime.ParseMediaType(ct); err == nil && t == "application/json" {
		return nil
	}
	if ct == "" {
		return api.Errorf(api.CodeMediaType, "request body has no Content-Type: send it as JSON with Content-Type: application/json")
	}
	return api.Errorf(api.CodeMediaType, "request body is %q: send it as JSON with Content-Type: application/json", ct)
}

// sameOrigin refuses (403) a request that a web page of another site
// sent: one whose Origin names neither the address the request was sent
// to (the console's own pages) nor the daemon's own address. A request
// without Origin passes: the CLI, agents and curl send none. Webhooks
// (/hooks/) are signed and come from other sites by design; they are not
// checked. The MCP spec asks this of every MCP server, against DNS
// rebinding and pages driving a local server.
func sameOrigin(self func() api.DaemonInfo, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || strings.HasPrefix(r.URL.Path, "/hooks/") || originAllowed(origin, r.Host, self) {
			next.ServeHTTP(w, r)
			return
		}
		writeJSON(w, http.StatusForbidden, api.Errorf(api.CodePermission,
			"cross-origin request from %s refused: the daemon answers only its own console pages and clients that send no Origin", origin))
	})
}

// originAllowed tells whether origin is the request's own host or the
// daemon's address. "null" (a sandboxed page, a file) is foreign.
func originAllowed(origin, host string, self func() api.DaemonInfo) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	if self == nil {
		return false
	}
	d := self()
	return strings.EqualFold(u.Host, net.JoinHostPort(d.Host, strconv.Itoa(d.Port)))
}
