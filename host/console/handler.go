package console

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/agent-worker/agent-worker/host/api"
)

// maxFormBytes bounds a console form (a message from the send box).
const maxFormBytes = 1 << 20

// Handler serves /console/ over inner: the daemon's API routes behind the
// bearer token. The console calls them in process for a logged-in
// session, so it never holds or shows the token.
func (s *Server) Handler(inner http.Handler) http.Handler {
	v := &views{s: s, inner: inner,
		api: &api.Client{BaseURL: "http://console.internal", HTTP: &http.Client{Transport: inProcess{inner}}}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /console/login", s.handleLogin)
	mux.Handle("GET /console/static/", staticHandler())
	page := func(pattern string, fn pageFunc) { mux.Handle(pattern, s.authed(fn)) }
	page("GET /console/{$}", v.overview)
	page("GET /console/team/{wf}/{tag}", v.team)
	page("GET /console/team/{wf}/{tag}/messages", v.messages)
	page("GET /console/team/{wf}/{tag}/search", v.search)
	page("POST /console/team/{wf}/{tag}/send", v.send)
	page("POST /console/control", v.control)
	page("GET /console/needs-you", v.needsYouItems)
	page("POST /console/questions/{id}/{verb}", v.decide)
	page("POST /console/workflows/{wf}/{tag}/accept", v.acceptEdit)
	page("GET /console/docs/{wf}/{tag}", v.docs)
	page("GET /console/docs/{wf}/{tag}/{path...}", v.doc)
	page("GET /console/resources/{wf}/{tag}/{id}", v.resource)
	page("GET /console/efforts/{id}", v.effort)
	page("GET /console/efforts/{id}/artifacts/{name}", v.artifact)
	page("GET /console/runs", v.runs)
	page("GET /console/runs/{id}", v.run)
	page("GET /console/cost", v.cost)
	page("GET /console/plugins", v.plugins)
	page("GET /console/events", v.events)
	page("GET /console/runs/{id}/events", v.runEvents)
	page("POST /console/logout", v.logout)
	mux.Handle("/console/", s.authed(func(w http.ResponseWriter, r *http.Request, _ session) error {
		return api.Errorf(api.CodeNotFound, "the console has no page %s", r.URL.Path)
	}))
	return securityHeaders(mux)
}

// securityHeaders are on every console response.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// same-origin, not no-referrer: with no-referrer a browser sends
		// "Origin: null" on form posts, which csrfOK rightly refuses.
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// handleLogin trades a one-time code for a session cookie and sends the
// browser on without the code in its address bar or history.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !s.takeCode(r.URL.Query().Get("code")) {
		s.pages().fail(w, http.StatusForbidden, "This login link does not work",
			"A login link works once, within a minute of being made. Run `agent-worker console` for a new one.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.newSession(), Path: "/console",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(SessionIdle.Seconds())})
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// pageFunc serves one console route for a logged-in session.
type pageFunc func(w http.ResponseWriter, r *http.Request, ss session) error

// authed lets a request through only with a live session, and a
// state-changing one only with the session's CSRF token.
func (s *Server) authed(fn pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		ss, ok := s.sessionOf(r)
		if !ok {
			s.pages().fail(w, http.StatusUnauthorized, "Not logged in",
				"Run `agent-worker console` on the daemon's machine for a one-time login link.")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil {
				s.pages().fail(w, http.StatusBadRequest, "The form could not be read",
					fmt.Sprintf("%v. A message may be at most %d bytes: put longer content in a document.", err, maxFormBytes))
				return
			}
			if !csrfOK(r, ss) {
				s.pages().fail(w, http.StatusForbidden, "Refused: no valid CSRF token",
					"Changes must come from a console page. Reload the page and try again.")
				return
			}
		}
		if err := fn(w, r, ss); err != nil {
			s.failWith(w, r, err)
		}
	})
}

// failWith answers err as a page: the API's own message and status, or a
// pointer to the daemon log for an internal error.
func (s *Server) failWith(w http.ResponseWriter, r *http.Request, err error) {
	var ae *api.Error
	if !errors.As(err, &ae) {
		s.log.Error("console request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		ae = api.Errorf(api.CodeInternal, "internal error in the daemon: see its log for details")
	}
	s.pages().fail(w, api.HTTPStatus(ae.Code), "Error: "+string(ae.Code), ae.Message)
}

// inProcess is an http.RoundTripper that serves each request with a
// handler in this process: the console's API client.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := &recorder{header: http.Header{}}
	t.h.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status: strconv.Itoa(rec.status) + " " + http.StatusText(rec.status), StatusCode: rec.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header, Body: io.NopCloser(&rec.body), ContentLength: int64(rec.body.Len()), Request: req,
	}, nil
}

// recorder buffers a response for inProcess.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
