package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
)

// TestProbes checks the liveness and readiness probes as a service
// manager calls them: without a token, getting a status and no details.
func TestProbes(t *testing.T) {
	t.Parallel()
	down := errors.New("dial tcp 10.0.0.5:5432: connection refused")
	for name, tc := range map[string]struct {
		path   string
		ready  error
		status int
		body   string
	}{
		"live":                         {path: "/healthz", status: http.StatusOK, body: "ok\n"},
		"live while the store is down": {path: "/healthz", ready: down, status: http.StatusOK, body: "ok\n"},
		"ready":                        {path: "/readyz", status: http.StatusOK, body: "ok\n"},
		"not ready":                    {path: "/readyz", ready: down, status: http.StatusServiceUnavailable, body: "unavailable\n"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			nowhere := http.NotFoundHandler()
			h := New(Deps{Token: testToken, Log: hclog.NewNullLogger(), MCP: nowhere, Metrics: nowhere,
				Info:  func() api.DaemonInfo { return api.DaemonInfo{Host: "127.0.0.1", Port: 5099} },
				Ready: func(context.Context) error { return tc.ready }})
			r := httptest.NewRequest("GET", "http://127.0.0.1:5099"+tc.path, nil) // no token
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status || w.Body.String() != tc.body {
				t.Errorf("GET %s without a token = %d %q, want %d %q", tc.path, w.Code, w.Body, tc.status, tc.body)
			}
		})
	}
	// The rest of the API still wants the token.
	h := testAPI(nil, nil)
	r := httptest.NewRequest("GET", "http://127.0.0.1:5099/health", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("GET /health without a token = %d, want 401", w.Code)
	}
}
