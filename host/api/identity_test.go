package api

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Identify knows a daemon over HTTP and over HTTPS with a certificate it
// cannot check, on loopback when the address is every interface, and
// takes nothing else for one.
func TestIdentify(t *testing.T) {
	t.Parallel()
	daemon := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(Identity{Service: Service, PID: 7, Home: "/h"})
	})
	other := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"service":"nginx"}`)) })
	for name, tc := range map[string]struct {
		srv    *httptest.Server
		anyIf  bool // ask for 0.0.0.0:port
		wantOK bool
	}{
		"http daemon":         {srv: httptest.NewServer(daemon), wantOK: true},
		"https daemon":        {srv: httptest.NewTLSServer(daemon), wantOK: true},
		"every interface":     {srv: httptest.NewServer(daemon), anyIf: true, wantOK: true},
		"another http server": {srv: httptest.NewServer(other)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer tc.srv.Close()
			addr := tc.srv.Listener.Addr().String()
			if tc.anyIf {
				_, port, _ := net.SplitHostPort(addr)
				addr = "0.0.0.0:" + port
			}
			id, ok := Identify(context.Background(), addr, 5*time.Second)
			if ok != tc.wantOK || (ok && id.String() != "the agent-worker daemon of home /h (pid 7)") {
				t.Errorf("Identify(%s) = %+v, %v; want ok %v", addr, id, ok, tc.wantOK)
			}
		})
	}
	// A plain listener that never answers is no daemon, within the wait.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	if id, ok := Identify(context.Background(), ln.Addr().String(), 300*time.Millisecond); ok || time.Since(start) > 3*time.Second {
		t.Errorf("a silent listener: %+v, %v after %s", id, ok, time.Since(start))
	}
	if s := (Identity{Service: Service}).String(); !strings.Contains(s, "an agent-worker daemon") {
		t.Errorf("an identity without home: %q", s)
	}
}
