package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// AGENT_WORKER_URL may be https, with AGENT_WORKER_TLS_FINGERPRINT pinning
// the certificate; a pin over plain http, or one that is not a SHA-256
// fingerprint, is a usage error that says so.
func TestRemoteDaemon(t *testing.T) {
	t.Parallel()
	fp := api.Fingerprint([]byte("cert"))
	d, err := remoteDaemon("https://daemon.example:5099", "tok", strings.ToLower(strings.ReplaceAll(fp, ":", "")))
	if err != nil || d.URL() != "https://daemon.example:5099" || d.TLS == nil || d.TLS.Fingerprint != fp {
		t.Errorf("https with a pin = %+v, %v", d, err)
	}
	if d, err := remoteDaemon("https://daemon.example:5099", "tok", ""); err != nil || d.Scheme != "https" || d.TLS != nil {
		t.Errorf("https without a pin = %+v, %v; want verified by the system's roots", d, err)
	}
	bad := map[string]struct{ url, pin, says string }{
		"pin over http": {"http://daemon.example:5099", fp, "not https"},
		"not hex":       {"https://daemon.example:5099", "nope", "not a SHA-256 certificate fingerprint"},
		"other scheme":  {"ftp://daemon.example:5099", "", "https://host:port"},
	}
	for name, tc := range bad {
		if _, err := remoteDaemon(tc.url, "tok", tc.pin); !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: remoteDaemon(%q, pin %q) = %v; want a usage error saying %q", name, tc.url, tc.pin, err, tc.says)
		}
	}
}
