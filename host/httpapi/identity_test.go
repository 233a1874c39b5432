package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// GET /identity tells its home and pid only to a caller on this machine
// that asked for a loopback address, not to another machine nor to a web
// page whose own name was rebound to loopback.
func TestIdentityTellsHomeOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	s := &Server{home: "/h"}
	for name, tc := range map[string]struct {
		remote, host string
		wantHome     bool
	}{
		"loopback":      {"127.0.0.1:4000", "127.0.0.1:5099", true},
		"loopback ipv6": {"[::1]:4000", "[::1]:5099", true},
		"other machine": {"192.0.2.7:4000", "192.0.2.1:5099", false},
		"rebound page":  {"127.0.0.1:4000", "evil.example:5099", false},
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/identity", nil)
			r.RemoteAddr, r.Host = tc.remote, tc.host
			w := httptest.NewRecorder()
			if err := s.handleIdentity(w, r); err != nil {
				t.Fatal(err)
			}
			var id api.Identity
			if err := json.NewDecoder(w.Body).Decode(&id); err != nil {
				t.Fatal(err)
			}
			if id.Service != api.Service || (id.Home == "/h") != tc.wantHome || (id.PID > 0) != tc.wantHome {
				t.Errorf("identity %+v, want home told: %v", id, tc.wantHome)
			}
		})
	}
}
