package api

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Identify asks whoever listens at addr (host:port, as a daemon's
// --listen) whether it is an agent-worker daemon, over HTTP and then
// HTTPS (a daemon with --tls; nothing secret is sent, so its certificate
// is not checked). An address of every interface is asked on loopback.
// ok is false when nothing answers as a daemon does within wait.
func Identify(ctx context.Context, addr string, wait time.Duration) (id Identity, ok bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Identity{}, false
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	if _, err := strconv.Atoi(port); err != nil {
		return Identity{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // only asks who it is; no token is sent
	defer t.CloseIdleConnections()
	hc := &http.Client{Transport: t}
	for _, scheme := range []string{"http", "https"} {
		if id, ok := identify(ctx, hc, scheme+"://"+net.JoinHostPort(host, port)+"/identity"); ok {
			return id, true
		}
	}
	return Identity{}, false
}

func identify(ctx context.Context, hc *http.Client, url string) (Identity, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Identity{}, false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Identity{}, false
	}
	defer resp.Body.Close()
	var id Identity
	if resp.StatusCode != http.StatusOK || json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<16)).Decode(&id) != nil || id.Service != Service {
		return Identity{}, false
	}
	return id, true
}
