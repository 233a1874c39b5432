package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/internal/testkit"
)

// Exit code 5 means no daemon answered, and nothing else: a daemon that
// answers "unavailable, retry", or accepts a request and does not answer in
// time, gets 6; a caller that gives up gets its context's error.
func TestClientErrorClasses(t *testing.T) {
	t.Parallel()
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"documents provider file is restarting after a crash: retry in 400ms","code":"unavailable"}`))
	}))
	t.Cleanup(unavailable.Close)
	bare503 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(bare503.Close)
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // accepts, never answers; returns when the client gives up
	}))
	t.Cleanup(silent.Close)
	deadAddr := testkit.FreeAddr(t) // nothing listens there

	tests := map[string]struct {
		url      string
		timeout  time.Duration
		code     Code
		exit     int
		says     string
		cancelIt bool
	}{
		"daemon says unavailable": {url: unavailable.URL, code: CodeUnavailable, exit: ExitUnavailable, says: "restarting"},
		"bare 503":                {url: bare503.URL, code: CodeUnavailable, exit: ExitUnavailable, says: "overloaded"},
		"accepted, no answer":     {url: silent.URL, timeout: 100 * time.Millisecond, code: CodeUnavailable, exit: ExitUnavailable, says: "did not answer within 100ms"},
		"nothing listening":       {url: "http://" + deadAddr, code: CodeUnreachable, exit: ExitUnreachable, says: "no daemon answered"},
		"caller gave up":          {url: silent.URL, cancelIt: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := &Client{BaseURL: tc.url, Token: "t", HTTP: &http.Client{Timeout: DefaultTimeout}}
			if tc.timeout > 0 {
				c.HTTP.Timeout = tc.timeout
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelIt {
				// Cancel while the request is in flight, as Ctrl-C would.
				c.HTTP.Transport = &cancelInFlight{cancel: cancel}
			}
			_, err := c.ListAgents(ctx)
			if tc.cancelIt {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("cancelled request: %v, want context.Canceled", err)
				}
				return
			}
			if ErrorCode(err) != tc.code || ExitCode(ErrorCode(err)) != tc.exit || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("ListAgents = %v (code %s, exit %d); want code %s, exit %d, saying %q",
					err, ErrorCode(err), ExitCode(ErrorCode(err)), tc.code, tc.exit, tc.says)
			}
		})
	}
}

// cancelInFlight cancels the request's context while sending the request
// to a daemon that never answers.
type cancelInFlight struct{ cancel context.CancelFunc }

func (c *cancelInFlight) RoundTrip(r *http.Request) (*http.Response, error) {
	go c.cancel()
	return http.DefaultTransport.RoundTrip(r)
}
