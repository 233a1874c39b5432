// Package console is the daemon's web console: server-rendered pages under
// /console/ that show and steer teams. It is one more client of the HTTP
// API, like the CLI: every page is built from API calls made in process
// to the routes behind the bearer token, and every button is one API call.
// It keeps no state of its own beyond login codes and sessions, which live
// in memory and end with the daemon.
package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
)

// Limits of the console's logins.
const (
	// CodeTTL is how long a one-time login code may wait to be used.
	CodeTTL = 60 * time.Second
	// SessionIdle ends a session nobody has used for this long.
	SessionIdle = 24 * time.Hour
	// cookieName holds the session id; Path=/console keeps it off the API.
	cookieName = "aw_console"
	// maxSessions bounds the session table; the least recently used one
	// goes first.
	maxSessions = 256
)

// contentSecurityPolicy allows the console's own script and style sheet
// and nothing else: no inline script, no other origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Config is what the console needs from the daemon.
type Config struct {
	Now func() time.Time
	Log hclog.Logger
	// TraceURL is the daemon's --trace-url: a run's trace in the user's
	// tracing UI, {trace_id} replaced; "" links to none.
	TraceURL string
}

// Server holds the console's login codes and sessions.
type Server struct {
	traceURL string
	now      func() time.Time
	log      hclog.Logger
	// pages are parsed at the console's first request: a daemon nobody
	// opens the console of keeps that memory.
	pages func() *pages

	mu       sync.Mutex
	codes    map[[32]byte]time.Time // sha256 of a code → when it expires
	sessions map[[32]byte]*session  // sha256 of a session id → the session
}

type session struct {
	csrf     string
	lastSeen time.Time
}

// New returns a console with no sessions.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	return &Server{traceURL: cfg.TraceURL, now: cfg.Now, log: cfg.Log, pages: sync.OnceValue(mustParsePages),
		codes: map[[32]byte]time.Time{}, sessions: map[[32]byte]*session{}}
}

// NewLogin mints a one-time login code and the URL that uses it, under
// baseURL (the daemon's own address).
func (s *Server) NewLogin(baseURL string) api.ConsoleLogin {
	code := randomToken()
	now := s.now()
	s.mu.Lock()
	for k, exp := range s.codes {
		if now.After(exp) {
			delete(s.codes, k)
		}
	}
	s.codes[sha256.Sum256([]byte(code))] = now.Add(CodeTTL)
	s.mu.Unlock()
	return api.ConsoleLogin{URL: baseURL + "/console/login?code=" + url.QueryEscape(code), ExpiresAt: now.Add(CodeTTL).UTC()}
}

// takeCode uses up code: true once, if it was minted and has not expired.
func (s *Server) takeCode(code string) bool {
	if code == "" {
		return false
	}
	k := sha256.Sum256([]byte(code))
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.codes[k]
	delete(s.codes, k)
	return ok && !s.now().After(exp)
}

// newSession starts a session and returns its id (the cookie's value).
func (s *Server) newSession() string {
	id := randomToken()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest [32]byte
	var oldestSeen time.Time
	for k, ss := range s.sessions {
		if now.Sub(ss.lastSeen) > SessionIdle {
			delete(s.sessions, k)
		} else if oldestSeen.IsZero() || ss.lastSeen.Before(oldestSeen) {
			oldest, oldestSeen = k, ss.lastSeen
		}
	}
	if len(s.sessions) >= maxSessions {
		delete(s.sessions, oldest)
	}
	s.sessions[sha256.Sum256([]byte(id))] = &session{csrf: randomToken(), lastSeen: now}
	return id
}

// sessionOf returns the session of r's cookie and marks it used, or false
// when there is none or it idled out.
func (s *Server) sessionOf(r *http.Request) (session, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return session{}, false
	}
	k := sha256.Sum256([]byte(c.Value))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[k]
	if !ok {
		return session{}, false
	}
	if now.Sub(ss.lastSeen) > SessionIdle {
		delete(s.sessions, k)
		return session{}, false
	}
	ss.lastSeen = now
	return *ss, true
}

// endSession forgets the session of r's cookie.
func (s *Server) endSession(r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		s.mu.Lock()
		delete(s.sessions, sha256.Sum256([]byte(c.Value)))
		s.mu.Unlock()
	}
}

// csrfOK checks a state-changing request: the session's CSRF token in the
// X-CSRF-Token header or the form's csrf field, and no foreign Origin.
func csrfOK(r *http.Request, ss session) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return false
		}
	}
	tok := r.Header.Get("X-CSRF-Token")
	if tok == "" {
		tok = r.PostFormValue("csrf")
	}
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(ss.csrf)) == 1
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}
