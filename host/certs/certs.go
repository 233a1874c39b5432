// Package certs gives the daemon its TLS certificate: the user's own
// (--tls-cert, --tls-key), or with --tls auto a self-signed one that it
// makes once, keeps in its home and reuses, so that the fingerprint
// clients pinned stays valid across restarts.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// Where --tls auto keeps its certificate, under the daemon's home. The
// home is out of every run's reach (the sandbox), and the key is 0600.
const (
	Dir      = "tls"
	CertFile = "cert.pem"
	KeyFile  = "key.pem"
)

// Validity is how long a certificate made by Auto lasts; it is made again
// once less than Renew is left.
const (
	Validity = 10 * 365 * 24 * time.Hour
	Renew    = 30 * 24 * time.Hour
)

// Cert is the daemon's certificate and what clients are told of it.
type Cert struct {
	TLS  tls.Certificate
	Info api.TLSInfo
}

// ServerConfig is the TLS configuration the daemon serves with.
func (c *Cert) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{c.TLS}}
}

// Load reads the user's certificate (PEM, the server's certificate first,
// then any intermediates) and its key. Clients verify it the usual way,
// under its first name, and may pin it too.
func Load(certFile, keyFile string) (*Cert, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, api.Errorf(api.CodeInvalid, "--tls-cert %s, --tls-key %s: %w", certFile, keyFile, err)
	}
	leaf := pair.Leaf
	name := ""
	switch {
	case len(leaf.DNSNames) > 0:
		name = leaf.DNSNames[0]
	case len(leaf.IPAddresses) > 0:
		name = leaf.IPAddresses[0].String()
	default:
		return nil, api.Errorf(api.CodeInvalid, "--tls-cert %s names no host (no DNS or IP subject alternative name): clients could not verify it; "+
			"make one with the daemon's host name, or use --tls auto", certFile)
	}
	if abs, err := filepath.Abs(certFile); err == nil {
		certFile = abs
	}
	return &Cert{TLS: pair, Info: api.TLSInfo{Fingerprint: api.Fingerprint(leaf.Raw), ServerName: name, CertFile: certFile, NotAfter: leaf.NotAfter.UTC()}}, nil
}

// Auto returns the self-signed certificate kept in home/tls, making a new
// one when there is none, when it is damaged or does not match its key,
// when it expires within Renew, or when it does not name every host in
// Names(listenHost). why says what happened, for the log ("" when the
// kept certificate was reused).
func Auto(home, listenHost string, now time.Time) (c *Cert, why string, err error) {
	dir := filepath.Join(home, Dir)
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	names := Names(listenHost)
	c, why = reuse(certPath, keyPath, names, now)
	if c != nil {
		return c, "", nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("tls certificate: %w", err)
	}
	certPEM, keyPEM, err := generate(names, extraIPs(listenHost), now)
	if err != nil {
		return nil, "", fmt.Errorf("tls certificate: %w", err)
	}
	// The key first: a certificate beside a key it does not match is made
	// again at the next start.
	if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, "", err
	}
	if err := writeFile(certPath, certPEM, 0o644); err != nil {
		return nil, "", err
	}
	c, bad := reuse(certPath, keyPath, names, now)
	if c == nil {
		return nil, "", fmt.Errorf("tls certificate: the one just made does not load: %s", bad)
	}
	return c, why, nil
}

// Names are the hosts a certificate of --tls auto must name: the listen
// address's own (unless it is every interface), localhost and the
// loopback addresses (which local clients use), and this machine's name.
func Names(listenHost string) []string {
	names := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil && validName(h) {
		names = append(names, strings.ToLower(h))
	}
	if ip := net.ParseIP(listenHost); listenHost != "" && (ip == nil || !ip.IsUnspecified()) && validName(listenHost) {
		names = append(names, strings.ToLower(listenHost))
	}
	return names
}

// extraIPs are the machine's own addresses, named too when the daemon
// listens on every interface, so that a client that verifies names (a
// node CLI given the certificate to trust) may use any of them. They are
// not required of a kept certificate: an address that changes must not
// change the fingerprint clients pinned.
func extraIPs(listenHost string) []net.IP {
	if ip := net.ParseIP(listenHost); listenHost != "" && (ip == nil || !ip.IsUnspecified()) {
		return nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			out = append(out, n.IP)
		}
	}
	return out
}

// validName keeps out of a certificate what cannot be a host name in one.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, r := range s {
		if !(r == '.' || r == '-' || r == ':' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// reuse loads the kept certificate if it still serves, or says why not.
func reuse(certPath, keyPath string, names []string, now time.Time) (*Cert, string) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, "no certificate yet"
	case err != nil:
		return nil, "the kept one does not load (" + err.Error() + ")"
	}
	leaf := pair.Leaf
	if now.Add(Renew).After(leaf.NotAfter) {
		return nil, "the kept one expires " + leaf.NotAfter.Format(time.DateOnly)
	}
	for _, n := range names {
		if leaf.VerifyHostname(n) != nil {
			return nil, "the kept one does not name " + n
		}
	}
	if fi, err := os.Stat(keyPath); err == nil && fi.Mode().Perm() != 0o600 {
		if err := os.Chmod(keyPath, 0o600); err != nil {
			return nil, "its key's mode cannot be made 0600 (" + err.Error() + ")"
		}
	}
	return &Cert{TLS: pair, Info: api.TLSInfo{Fingerprint: api.Fingerprint(leaf.Raw), SelfSigned: true, CertFile: certPath, NotAfter: leaf.NotAfter.UTC()}}, ""
}

// generate makes an ECDSA P-256 key and a certificate for names (and
// ips) signed by that key, in PEM.
func generate(names []string, ips []net.IP, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "agent-worker daemon", Organization: []string{"agent-worker (self-signed, --tls auto)"}},
		NotBefore:             now.Add(-time.Hour), // a client's clock a little behind
		NotAfter:              now.Add(Validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, // and not a CA: trusting it trusts this daemon, nothing it could sign
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	tmpl.IPAddresses = append(tmpl.IPAddresses, ips...)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil
}

// writeFile writes path through a rename, with mode from the first byte.
func writeFile(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	defer os.Remove(f.Name()) // no-op after the rename
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("tls certificate: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("tls certificate: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	return nil
}
