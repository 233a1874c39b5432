package contract

import "time"

// TLSInfo is how a daemon serving HTTPS proves who it is: it is published
// in daemon.json, shown by status and handed to MCP clients, so that a
// client can pin the certificate instead of trusting whoever answers.
type TLSInfo struct {
	// Fingerprint is the SHA-256 of the certificate (DER), as upper-case
	// hex pairs joined by colons: what `openssl x509 -fingerprint -sha256`
	// prints.
	Fingerprint string `json:"fingerprint"`
	// SelfSigned is true for the certificate of --tls auto, which no
	// authority vouches for: clients verify it by Fingerprint alone.
	SelfSigned bool `json:"self_signed,omitempty"`
	// ServerName is the name a client verifies a user's certificate by
	// (its first DNS name or IP address) when it connects to another
	// address, as the local CLI does on loopback.
	ServerName string `json:"server_name,omitempty"`
	// CertFile is the certificate's PEM file on the daemon's machine: what
	// a client that cannot pin (Claude Code, Codex) is told to trust.
	CertFile string    `json:"cert_file,omitempty"`
	NotAfter time.Time `json:"not_after,omitzero"`
}
