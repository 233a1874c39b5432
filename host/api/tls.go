package api

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Fingerprint is the SHA-256 fingerprint of a DER certificate in the form
// TLSInfo.Fingerprint uses.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hexPairs(sum[:])
}

// hexPairs is b as upper-case hex pairs joined by colons.
func hexPairs(b []byte) string {
	s := strings.ToUpper(hex.EncodeToString(b))
	var out strings.Builder
	for i := 0; i < len(s); i += 2 {
		if i > 0 {
			out.WriteByte(':')
		}
		out.WriteString(s[i : i+2])
	}
	return out.String()
}

// ParseFingerprint reads a SHA-256 fingerprint as people paste it: hex,
// in pairs joined by colons or not, either case, with or without a
// "sha256:" or "SHA256 Fingerprint=" prefix. It returns the canonical
// form.
func ParseFingerprint(s string) (string, error) {
	t := strings.TrimSpace(s)
	for _, prefix := range []string{"sha256 fingerprint=", "sha256:", "sha256="} {
		if strings.HasPrefix(strings.ToLower(t), prefix) {
			t = t[len(prefix):]
			break
		}
	}
	raw, err := hex.DecodeString(strings.ReplaceAll(t, ":", ""))
	if err != nil || len(raw) != sha256.Size {
		return "", Errorf(CodeInvalid, "%q is not a SHA-256 certificate fingerprint: give the 64 hex digits (colons allowed) that `agent-worker status` shows on the daemon's machine", s)
	}
	return hexPairs(raw), nil
}

// PinError says the server's certificate is not the one the client
// pinned: another server answers at the address, or the daemon's
// certificate changed.
type PinError struct {
	Got, Want string
}

func (e *PinError) Error() string {
	return fmt.Sprintf("the server's TLS certificate has fingerprint %s, not the pinned %s", e.Got, e.Want)
}

// ClientTLS is the TLS configuration that talks to the daemon d describes:
// nil when it serves plain HTTP. Without a pinned fingerprint the
// certificate is verified the usual way, by the system's roots; with one,
// it must have that fingerprint, and a certificate an authority signed
// (a user's, not the self-signed one of --tls auto, which no authority
// vouches for) must verify the usual way too.
func ClientTLS(d DaemonInfo) *tls.Config {
	if d.Scheme != "https" {
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	var pin string
	if d.TLS != nil {
		pin, cfg.ServerName = d.TLS.Fingerprint, d.TLS.ServerName
	}
	if pin == "" {
		return cfg
	}
	// The standard check is made below, after the pin, where a
	// self-signed certificate can be told apart.
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return &PinError{Got: "none", Want: pin}
		}
		leaf := cs.PeerCertificates[0]
		if got := Fingerprint(leaf.Raw); got != pin {
			return &PinError{Got: got, Want: pin}
		}
		if selfSigned(leaf) {
			return nil // the pin names exactly this certificate
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: cs.ServerName, Intermediates: inter})
		return err
	}
	return cfg
}

// selfSigned reports whether c is its own issuer, signed by its own key.
func selfSigned(c *x509.Certificate) bool {
	return bytes.Equal(c.RawIssuer, c.RawSubject) && c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil
}

// tlsError turns a failed TLS handshake into an error that says what to
// do, or returns nil when err is not one.
func tlsError(baseURL string, err error) error {
	var pe *PinError
	if errors.As(err, &pe) {
		return Errorf(CodePermission, "refused the daemon at %s: %v; another server answers there, or the daemon's certificate changed "+
			"(compare with `agent-worker status` on the daemon's machine, and fix daemon.json or AGENT_WORKER_TLS_FINGERPRINT)", baseURL, pe)
	}
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua), errors.As(err, &hn), errors.As(err, &ci):
		return Errorf(CodePermission, "refused the daemon at %s: its TLS certificate does not verify (%v); a daemon with --tls auto is verified by its fingerprint: "+
			"set AGENT_WORKER_TLS_FINGERPRINT to the one `agent-worker status` shows on the daemon's machine", baseURL, err)
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") { // net/http's words, not a type
		return Errorf(CodeUnreachable, "the server at %s does not speak TLS (%v): use http:// if the daemon runs without --tls", baseURL, err)
	}
	return nil
}

// newHTTPClient is the client NewClient uses for d.
func newHTTPClient(d DaemonInfo) *http.Client {
	hc := &http.Client{Timeout: DefaultTimeout}
	if cfg := ClientTLS(d); cfg != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg
		hc.Transport = t
	}
	return hc
}
