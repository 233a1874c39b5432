package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// The first start makes an ECDSA P-256 certificate naming the listen
// host, localhost, the loopback addresses and the machine's name, with
// its key 0600 in the home; the next start reuses it, so the pinned
// fingerprint holds.
func TestAutoMakesOnceAndReuses(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	c, why, err := Auto(home, "192.0.2.7", now)
	if err != nil {
		t.Fatal(err)
	}
	if why != "no certificate yet" {
		t.Errorf("first start: why = %q", why)
	}
	leaf := c.TLS.Leaf
	if k, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("key is %T, want ECDSA P-256", leaf.PublicKey)
	}
	host, _ := os.Hostname()
	for _, n := range []string{"192.0.2.7", "localhost", "127.0.0.1", "::1", host} {
		if err := leaf.VerifyHostname(n); err != nil {
			t.Errorf("certificate does not name %s: %v", n, err)
		}
	}
	if leaf.IsCA {
		t.Error("the self-signed certificate is a CA: trusting it would trust whatever its key signs")
	}
	if !c.Info.SelfSigned || c.Info.Fingerprint != api.Fingerprint(leaf.Raw) || c.Info.CertFile != filepath.Join(home, Dir, CertFile) {
		t.Errorf("info = %+v", c.Info)
	}
	if got := leaf.NotAfter.Sub(now); got < 9*365*24*time.Hour {
		t.Errorf("valid for %s, want years", got)
	}
	fi, err := os.Stat(filepath.Join(home, Dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}

	again, why, err := Auto(home, "192.0.2.7", now.Add(24*time.Hour))
	if err != nil || why != "" || again.Info.Fingerprint != c.Info.Fingerprint {
		t.Errorf("restart: fingerprint %s (why %q, %v); want the kept %s", again.Info.Fingerprint, why, err, c.Info.Fingerprint)
	}
}

// A kept certificate that no longer serves is made again: another listen
// host, a key that does not match, a damaged file, a near end of
// validity, or a missing file.
func TestAutoRegenerates(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		spoil  func(t *testing.T, home string)
		listen string
		at     time.Time
		why    string
	}{
		"listen host changed": {listen: "192.0.2.99", at: now, why: "does not name 192.0.2.99"},
		"expiring":            {listen: "192.0.2.7", at: now.Add(Validity - 10*24*time.Hour), why: "expires"},
		"key replaced": {listen: "192.0.2.7", at: now, why: "does not load", spoil: func(t *testing.T, home string) {
			other := t.TempDir()
			if _, _, err := Auto(other, "192.0.2.7", now); err != nil {
				t.Fatal(err)
			}
			copyFile(t, filepath.Join(other, Dir, KeyFile), filepath.Join(home, Dir, KeyFile))
		}},
		"damaged": {listen: "192.0.2.7", at: now, why: "does not load", spoil: func(t *testing.T, home string) {
			if err := os.WriteFile(filepath.Join(home, Dir, CertFile), []byte("-----BEGIN CERT"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		"key deleted": {listen: "192.0.2.7", at: now, why: "no certificate yet", spoil: func(t *testing.T, home string) {
			if err := os.Remove(filepath.Join(home, Dir, KeyFile)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			first, _, err := Auto(home, "192.0.2.7", now)
			if err != nil {
				t.Fatal(err)
			}
			if tc.spoil != nil {
				tc.spoil(t, home)
			}
			c, why, err := Auto(home, tc.listen, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			if c.Info.Fingerprint == first.Info.Fingerprint || !contains(why, tc.why) {
				t.Errorf("fingerprint %s (first %s), why %q; want a new certificate because %q", c.Info.Fingerprint, first.Info.Fingerprint, why, tc.why)
			}
			if _, why, _ := Auto(home, tc.listen, tc.at); why != "" {
				t.Errorf("the new certificate is not reused: %q", why)
			}
		})
	}
}

// Every interface: the certificate names the machine's addresses too, but
// does not require them of a kept one.
func TestAutoOnEveryInterface(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	c, _, err := Auto(home, "0.0.0.0", now)
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range extraIPs("0.0.0.0") {
		if err := c.TLS.Leaf.VerifyHostname(ip.String()); err != nil {
			t.Errorf("certificate for 0.0.0.0 does not name this machine's %s", ip)
		}
	}
	if err := c.TLS.Leaf.VerifyHostname("0.0.0.0"); err == nil {
		t.Error("certificate names 0.0.0.0")
	}
}

// The user's certificate: loaded with its fingerprint and the name clients
// verify it by; bad files are refused naming them.
func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	made, _, err := Auto(dir, "daemon.example.test", now)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, Dir, CertFile), filepath.Join(dir, Dir, KeyFile)
	c, err := Load(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if c.Info.Fingerprint != made.Info.Fingerprint || c.Info.SelfSigned || c.Info.ServerName != "localhost" {
		t.Errorf("loaded %+v", c.Info)
	}
	if _, err := Load(certPath, filepath.Join(dir, "missing.pem")); api.ErrorCode(err) != api.CodeInvalid || !contains(err.Error(), "missing.pem") {
		t.Errorf("Load with a missing key = %v; want invalid naming the file", err)
	}
	if _, err := Load(keyPath, keyPath); api.ErrorCode(err) != api.CodeInvalid {
		t.Errorf("Load of a key as the certificate = %v; want invalid", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
