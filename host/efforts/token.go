package efforts

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/agent-worker/agent-worker/host/contract"
)

// tokenKeySetting names the continue tokens' HMAC key in the store's
// shared settings: the first daemon to need one writes it, every member
// of a cluster reads the same.
const tokenKeySetting = "effort_token_key"

// tokenPrefix starts every continue token, so that a pasted one reads as
// what it is.
const tokenPrefix = "awe1"

// token is what a continue token names: an effort, the phase it leaves
// and the nonce the store holds for that phase.
type token struct {
	Effort string
	Phase  int
	Nonce  string
}

// signer signs and checks continue tokens with the daemon's key.
type signer struct{ key []byte }

// loadSigner reads (or, the first time, makes) the key kept in the store.
func loadSigner(ctx context.Context, shared func(ctx context.Context, key, candidate string) (string, error)) (*signer, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("effort token key: %w", err)
	}
	v, err := shared(ctx, tokenKeySetting, hex.EncodeToString(b))
	if err != nil {
		return nil, fmt.Errorf("effort token key: %w", err)
	}
	key, err := hex.DecodeString(v)
	if err != nil || len(key) < 16 {
		return nil, fmt.Errorf("effort token key in the store is not a key")
	}
	return &signer{key: key}, nil
}

// newNonce is a fresh nonce for a phase's token.
func newNonce() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand never fails on a supported system
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *signer) mac(t token) string {
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "%s\x00%d\x00%s", t.Effort, t.Phase, t.Nonce)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Sign is t as an agent holds it: awe1.<effort>.<phase>.<nonce>.<mac>.
func (s *signer) Sign(t token) string {
	return strings.Join([]string{tokenPrefix, t.Effort, strconv.Itoa(t.Phase), t.Nonce, s.mac(t)}, ".")
}

// Verify reads a token and checks its signature; a token of another
// daemon, or one edited, is refused without saying more.
func (s *signer) Verify(text string) (token, error) {
	bad := contract.Errorf(contract.CodeInvalid, "not a token of this daemon: give the token the last effort tool answered (effort_status shows it again)")
	parts := strings.Split(strings.TrimSpace(text), ".")
	if len(parts) != 5 || parts[0] != tokenPrefix {
		return token{}, bad
	}
	phase, err := strconv.Atoi(parts[2])
	if err != nil || phase < 0 {
		return token{}, bad
	}
	t := token{Effort: parts[1], Phase: phase, Nonce: parts[3]}
	if !hmac.Equal([]byte(s.mac(t)), []byte(parts[4])) {
		return token{}, bad
	}
	return t, nil
}
