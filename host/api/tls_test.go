package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tlsDaemon is a TLS server answering /health like a daemon, and the
// daemon.json a client would read for it (host, port, scheme). Its
// certificate is httptest's (the same for every server), or with own a
// fresh self-signed one that no roots hold: the system's roots are loaded
// once per process, and one test puts httptest's among them.
func tlsDaemon(t *testing.T, own ...bool) (*httptest.Server, DaemonInfo) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
	}))
	if len(own) > 0 && own[0] {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{selfSignedCert(t)}}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	return srv, DaemonInfo{Host: u.Hostname(), Port: port, Token: "t", Scheme: "https"}
}

// A client verifies a self-signed daemon by the fingerprint it pinned: the
// right one works, a wrong one is refused with an error that names both
// fingerprints and what to do, with exit 1, not 5 (no script starts a
// daemon because another server answered).
func TestClientPinsTheDaemonsCertificate(t *testing.T) {
	t.Parallel()
	srv, d := tlsDaemon(t, true)
	right := Fingerprint(srv.Certificate().Raw)
	wrong := Fingerprint([]byte("another certificate"))

	d.TLS = &TLSInfo{Fingerprint: right, SelfSigned: true}
	if _, err := NewClient(d).Health(context.Background()); err != nil {
		t.Fatalf("health with the right pin: %v", err)
	}

	d.TLS = &TLSInfo{Fingerprint: wrong, SelfSigned: true}
	_, err := NewClient(d).Health(context.Background())
	if ErrorCode(err) != CodePermission || ExitCode(ErrorCode(err)) != ExitError {
		t.Fatalf("health with a wrong pin = %v (code %q, exit %d); want a permission error, exit %d", err, ErrorCode(err), ExitCode(ErrorCode(err)), ExitError)
	}
	for _, want := range []string{right, wrong, "refused the daemon at " + d.URL(), "certificate changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("wrong-pin error %q does not say %q", err, want)
		}
	}
}

// Without a pin, a self-signed certificate does not verify: the client
// refuses it and says how to pin it.
func TestClientRefusesAnUnpinnedSelfSignedDaemon(t *testing.T) {
	t.Parallel()
	_, d := tlsDaemon(t, true)
	_, err := NewClient(d).Health(context.Background())
	if ErrorCode(err) != CodePermission || !strings.Contains(err.Error(), "AGENT_WORKER_TLS_FINGERPRINT") {
		t.Fatalf("health without a pin = %v; want a permission error naming AGENT_WORKER_TLS_FINGERPRINT", err)
	}
}

// A user's certificate is verified the usual way (roots and name) and by
// the pin too: a certificate the roots trust but with another fingerprint
// is refused.
func TestClientVerifiesAUsersCertificateAndItsPin(t *testing.T) {
	srv, d := tlsDaemon(t)
	// The roots the system would give: a file holding the test server's
	// certificate (SSL_CERT_FILE is how Go finds them on Linux).
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", ca)
	if _, err := x509.SystemCertPool(); err != nil {
		t.Skipf("no system cert pool here (%v): cannot stand in for the system's roots", err)
	}
	name := "example.com" // httptest's certificate names example.com and 127.0.0.1
	d.TLS = &TLSInfo{ServerName: name}
	if _, err := NewClient(d).Health(context.Background()); err != nil {
		t.Fatalf("health verified by the roots under %s: %v", name, err)
	}
	d.TLS = &TLSInfo{ServerName: "not-this-host.invalid"}
	if _, err := NewClient(d).Health(context.Background()); ErrorCode(err) != CodePermission {
		t.Errorf("health under a name the certificate lacks = %v; want refused", err)
	}
	d.TLS = &TLSInfo{ServerName: name, Fingerprint: Fingerprint([]byte("x"))}
	if _, err := NewClient(d).Health(context.Background()); ErrorCode(err) != CodePermission || !strings.Contains(err.Error(), "not the pinned") {
		t.Errorf("health with roots that trust it but a wrong pin = %v; want refused by the pin", err)
	}
}

// A client speaking TLS to a plain HTTP server says so.
func TestClientTLSToPlainHTTP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	p, _ := strconv.Atoi(port)
	d := DaemonInfo{Host: host, Port: p, Scheme: "https", TLS: &TLSInfo{Fingerprint: Fingerprint([]byte("x")), SelfSigned: true}}
	_, err := NewClient(d).Health(context.Background())
	if ErrorCode(err) != CodeUnreachable || !strings.Contains(err.Error(), "does not speak TLS") {
		t.Errorf("https to a plain HTTP server = %v; want unreachable saying it does not speak TLS", err)
	}
}

func TestParseFingerprint(t *testing.T) {
	t.Parallel()
	want := Fingerprint([]byte("cert"))
	plain := strings.ReplaceAll(want, ":", "")
	ok := map[string]string{
		"canonical": want, "lower": strings.ToLower(want), "no colons": plain,
		"sha256 prefix": "sha256:" + plain, "openssl": "SHA256 Fingerprint=" + want, "spaces": "  " + want + "\n",
	}
	for name, in := range ok {
		if got, err := ParseFingerprint(in); err != nil || got != want {
			t.Errorf("%s: ParseFingerprint(%q) = %q, %v; want %q", name, in, got, err, want)
		}
	}
	for _, in := range []string{"", "zz", plain[:62], plain + "00", "md5:" + plain} {
		if _, err := ParseFingerprint(in); ErrorCode(err) != CodeInvalid {
			t.Errorf("ParseFingerprint(%q) = %v; want invalid", in, err)
		}
	}
}

// selfSignedCert is a new ECDSA certificate for 127.0.0.1 signed by its
// own key, not a CA, as --tls auto makes them.
func selfSignedCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test daemon"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
