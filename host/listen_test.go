package host

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
)

// holdAddr takes a free loopback port for the test: with asDaemon, an
// HTTP server that answers GET /identity as the daemon of home /x does;
// otherwise a plain listener, as any other program.
func holdAddr(t *testing.T, asDaemon bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if asDaemon {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/identity" {
				http.NotFound(w, r)
				return
			}
			_ = json.NewEncoder(w).Encode(api.Identity{Service: api.Service, Version: "test", PID: 12, Home: "/x"})
		})}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { srv.Close() })
	}
	return ln.Addr().String()
}

// freeAddr is a loopback address nothing listens on (just released).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// The daemon's address: the default gives way to whoever holds it (a
// free port, and status says who held it); an address the user chose is
// kept or refused with the holder named and how to stop it.
func TestListenAPI(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		held, asDaemon, chosen bool
		heldBy                 string   // the fallback's; "" for none
		refused                []string // the error names these; nil for no error
	}{
		"default free":              {},
		"default held by a program": {held: true, heldBy: "another program"},
		"default held by a daemon":  {held: true, asDaemon: true, heldBy: "the agent-worker daemon of home /x (pid 12)"},
		"chosen free":               {chosen: true},
		"chosen held by a program":  {held: true, chosen: true, refused: []string{"address already in use by another program", "--listen"}},
		"chosen held by a daemon":   {held: true, asDaemon: true, chosen: true, refused: []string{"by the agent-worker daemon of home /x (pid 12)", "`agent-worker stop --all --home /x`", "--listen"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr := freeAddr(t)
			if tc.held {
				addr = holdAddr(t, tc.asDaemon)
			}
			ln, fb, err := listenAPI(context.Background(), addr, tc.chosen, hclog.NewNullLogger())
			if tc.refused != nil {
				var inUse *AddrInUseError
				if !errors.As(err, &inUse) {
					t.Fatalf("listen on a taken chosen address: %v, want an AddrInUseError", err)
				}
				for _, want := range tc.refused {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			switch {
			case tc.heldBy == "" && (fb != nil || ln.Addr().String() != addr):
				t.Errorf("listening on %s (fallback %+v), want %s", ln.Addr(), fb, addr)
			case tc.heldBy != "" && (fb == nil || fb.Default != addr || fb.HeldBy != tc.heldBy || ln.Addr().String() == addr):
				t.Errorf("listening on %s with fallback %+v, want a free port and held by %q", ln.Addr(), fb, tc.heldBy)
			}
		})
	}
}

// The advice of a refused address fits where the user chose it: a
// command that started the daemon for them names the variable.
func TestAddrInUseExplain(t *testing.T) {
	t.Parallel()
	e := &AddrInUseError{Addr: "127.0.0.1:5099", Holder: &api.Identity{Service: api.Service, Home: "/h", PID: 3}}
	got := e.Explain("pick another address with AGENT_WORKER_LISTEN")
	want := "listen on 127.0.0.1:5099: address already in use by the agent-worker daemon of home /h (pid 3): " +
		"stop it with `agent-worker stop --all --home /h`, or pick another address with AGENT_WORKER_LISTEN"
	if got != want {
		t.Errorf("Explain:\n got %s\nwant %s", got, want)
	}
}
