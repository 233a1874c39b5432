package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func codeOf(t *testing.T, link string) string {
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("code")
}

// A login code lasts a minute and works once.
func TestLoginCodeExpiresAndWorksOnce(t *testing.T) {
	clk := &clock{now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	s := New(Config{Now: clk.Now})
	l := s.NewLogin("http://127.0.0.1:7777")
	if !strings.HasPrefix(l.URL, "http://127.0.0.1:7777/console/login?code=") || !l.ExpiresAt.Equal(clk.now.Add(CodeTTL)) {
		t.Fatalf("login = %+v", l)
	}
	late := s.NewLogin("http://x")
	clk.now = clk.now.Add(CodeTTL)
	if !s.takeCode(codeOf(t, l.URL)) {
		t.Error("a code at its last second is refused")
	}
	if s.takeCode(codeOf(t, l.URL)) {
		t.Error("a code works twice")
	}
	clk.now = clk.now.Add(time.Second)
	if s.takeCode(codeOf(t, late.URL)) {
		t.Error("an expired code works")
	}
	if s.takeCode("") {
		t.Error("an empty code works")
	}
}

// A session ends after a day without use; using it keeps it alive.
func TestSessionEndsAfterADayIdle(t *testing.T) {
	clk := &clock{now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	s := New(Config{Now: clk.Now})
	id := s.newSession()
	req := func() *http.Request {
		r := httptest.NewRequest("GET", "/console/", nil)
		r.AddCookie(&http.Cookie{Name: cookieName, Value: id})
		return r
	}
	clk.now = clk.now.Add(SessionIdle - time.Minute)
	if _, ok := s.sessionOf(req()); !ok {
		t.Fatal("a session used within a day ended")
	}
	clk.now = clk.now.Add(SessionIdle - time.Minute)
	if _, ok := s.sessionOf(req()); !ok {
		t.Fatal("using a session did not keep it alive")
	}
	clk.now = clk.now.Add(SessionIdle + time.Second)
	if _, ok := s.sessionOf(req()); ok {
		t.Fatal("a session idle for over a day still works")
	}
}

// The table of sessions is bounded: the least recently used goes.
func TestSessionTableIsBounded(t *testing.T) {
	clk := &clock{now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	s := New(Config{Now: clk.Now})
	first := s.newSession()
	for range maxSessions {
		clk.now = clk.now.Add(time.Second)
		s.newSession()
	}
	if len(s.sessions) != maxSessions {
		t.Errorf("%d sessions, want at most %d", len(s.sessions), maxSessions)
	}
	r := httptest.NewRequest("GET", "/console/", nil)
	r.AddCookie(&http.Cookie{Name: cookieName, Value: first})
	if _, ok := s.sessionOf(r); ok {
		t.Error("the least recently used session survived")
	}
}

// Markdown is rendered without raw HTML or script links.
func TestMarkdownIsSafe(t *testing.T) {
	out, err := renderMarkdown("# Notes\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) <img src=x onerror=alert(1)>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, bad := range []string{"<script", "javascript:", "onerror"} {
		if strings.Contains(s, bad) {
			t.Errorf("rendered markdown keeps %q:\n%s", bad, s)
		}
	}
	for _, good := range []string{"<h1>Notes</h1>", "<table>", "<td>2</td>"} {
		if !strings.Contains(s, good) {
			t.Errorf("rendered markdown lacks %q:\n%s", good, s)
		}
	}
}

// A long message folds at a space, never inside a UTF-8 sequence.
func TestFoldKeepsUTF8(t *testing.T) {
	long := strings.Repeat("é", foldChars)
	parts := fold(long)
	if len(parts) != 2 || parts[0]+parts[1] != long {
		t.Fatalf("fold lost text: %d parts", len(parts))
	}
	for _, p := range parts {
		if !strings.HasPrefix(p, "é") {
			t.Errorf("a part starts inside a character: %q", p[:4])
		}
	}
	if got := fold("short"); len(got) != 1 {
		t.Errorf("a short message folds: %q", got)
	}
}

// A form over the limit is refused saying so, not as a missing CSRF token.
func TestOversizedFormSaysSo(t *testing.T) {
	s := New(Config{})
	h := s.Handler(http.NotFoundHandler())
	body := "csrf=x&message=" + strings.Repeat("a", maxFormBytes)
	req := httptest.NewRequest("POST", "/console/team/crew/main/send", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: cookieName, Value: s.newSession()})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "put longer content in a document") {
		t.Errorf("oversized form: %d\n%s", rec.Code, rec.Body.String())
	}
}

// What agents write is rendered as Markdown with its raw HTML shown as
// text, inline or a block, and no script link.
func TestMarkdownTextShowsHTMLAsText(t *testing.T) {
	out, err := renderMarkdownText("**bold** a map<string>\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) <img src=x onerror=alert(1)>\n")
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, bad := range []string{"<script", "<img", "javascript:", "<string>"} {
		if strings.Contains(s, bad) {
			t.Errorf("rendered text keeps %q:\n%s", bad, s)
		}
	}
	for _, good := range []string{"<strong>bold</strong>", "a map&lt;string&gt;", `<pre class="raw">&lt;script&gt;alert(1)&lt;/script&gt;`, "&lt;img src=x onerror=alert(1)&gt;"} {
		if !strings.Contains(s, good) {
			t.Errorf("rendered text lacks %q:\n%s", good, s)
		}
	}
}
