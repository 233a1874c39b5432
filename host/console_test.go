package host

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
)

// browser is an HTTP client that keeps cookies and does not follow
// redirects, so a test sees each answer the way a browser gets it.
type browser struct {
	t  *testing.T
	hc *http.Client
	th *testHost
}

func newBrowser(t *testing.T, th *testHost) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, th: th, hc: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(method, path string, form url.Values, header ...string) (*http.Response, string) {
	b.t.Helper()
	body := strings.NewReader(form.Encode()) // a nil form encodes as ""
	u := path
	if strings.HasPrefix(path, "/") {
		u = b.th.url(path)
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp, string(got)
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// login gets a one-time link with the daemon's token and uses it.
func (b *browser) login() (link string, csrf string) {
	b.t.Helper()
	status, apiErr, body := b.th.call(b.t, "POST", "/console/codes", "")
	if status != http.StatusOK {
		b.t.Fatalf("POST /console/codes: %d %v", status, apiErr)
	}
	var l api.ConsoleLogin
	if err := json.Unmarshal(body, &l); err != nil {
		b.t.Fatal(err)
	}
	resp, page := b.do("GET", l.URL, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
		b.t.Fatalf("login link: %d → %q, want 303 to /console/\n%s", resp.StatusCode, resp.Header.Get("Location"), page)
	}
	_, page = b.do("GET", "/console/", nil)
	m := csrfMeta.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("overview has no CSRF token:\n%s", page)
	}
	return l.URL, m[1]
}

// The console's security contract over real HTTP: the token mints a code,
// the code works once and sets a locked-down cookie, pages need the
// cookie, changes need the page's CSRF token, agent content is escaped,
// and every page carries the CSP.
func TestConsoleLoginSessionsAndCSRF(t *testing.T) {
	t.Parallel()
	th, _ := pluginHost(t, runner.SupervisorConfig{}, noPoll)
	ctx := context.Background()
	c := th.client()
	file := filepath.Join(t.TempDir(), "crew.yaml")
	saveFile(t, file, pausedTeam)
	if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file}); err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(ctx, api.Target{Workflow: "crew", Tag: "main"}); err != nil {
		t.Fatal(err)
	}

	// Without a session every page says how to log in.
	anon := newBrowser(t, th)
	if resp, body := anon.do("GET", "/console/", nil); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "agent-worker console") {
		t.Errorf("no session: %d %s", resp.StatusCode, body)
	}
	// Minting a code takes the daemon's token.
	if status, _, _ := th.call(t, "POST", "/console/codes", "", ""); status != http.StatusUnauthorized {
		t.Errorf("POST /console/codes without the token: %d, want 401", status)
	}

	b := newBrowser(t, th)
	link, csrf := b.login()
	u, _ := url.Parse(th.url("/console/"))
	var session *http.Cookie
	for _, ck := range b.hc.Jar.Cookies(u) {
		if ck.Name == "aw_console" {
			session = ck
		}
	}
	if session == nil {
		t.Fatal("no session cookie after login")
	}
	// The jar hides the flags; read them from a fresh login's header.
	other := newBrowser(t, th)
	status, apiErr, body := th.call(t, "POST", "/console/codes", "")
	if status != http.StatusOK {
		t.Fatalf("POST /console/codes: %d %v", status, apiErr)
	}
	var l api.ConsoleLogin
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatalf("the login code: %v\n%s", err, body)
	}
	resp, page := other.do("GET", l.URL, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login link: %d, want 303\n%s", resp.StatusCode, page)
	}
	setCookie := resp.Header.Get("Set-Cookie")
	for _, flag := range []string{"HttpOnly", "SameSite=Strict", "Path=/console"} {
		if !strings.Contains(setCookie, flag) {
			t.Errorf("Set-Cookie %q lacks %s", setCookie, flag)
		}
	}
	if strings.Contains(setCookie, "Secure") {
		t.Errorf("Set-Cookie %q is Secure on plain HTTP: the browser would drop it", setCookie)
	}
	// A used code is refused, and says what to do.
	if resp, body := newBrowser(t, th).do("GET", link, nil); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "agent-worker console") {
		t.Errorf("reused login code: %d %s", resp.StatusCode, body)
	}
	if resp, body := newBrowser(t, th).do("GET", "/console/login?code=made-up", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("made-up login code: %d, want 403\n%s", resp.StatusCode, body)
	}

	// Pages carry the CSP, and the team page shows the team.
	resp, page = b.do("GET", "/console/team/crew/main", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "@crew") || !strings.Contains(page, "alice") {
		t.Fatalf("team page: %d\n%s", resp.StatusCode, page)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP = %q", csp)
	}

	// A change without the CSRF token is refused and posts nothing.
	send := "/console/team/crew/main/send"
	if resp, body := b.do("POST", send, url.Values{"message": {"no token"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("send without CSRF token: %d, want 403\n%s", resp.StatusCode, body)
	}
	if resp, body := b.do("POST", send, url.Values{"message": {"wrong token"}, "csrf": {"x" + csrf}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("send with a wrong CSRF token: %d, want 403\n%s", resp.StatusCode, body)
	}
	if resp, body := b.do("POST", send, url.Values{"message": {"foreign"}}, "X-CSRF-Token", csrf, "Origin", "http://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("send from a foreign origin: %d, want 403\n%s", resp.StatusCode, body)
	}
	// With it, the message lands as the user's, and a script is text.
	script := `<script>alert("owned")</script> @alice`
	if resp, body := b.do("POST", send, url.Values{"message": {script}, "csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("send with the CSRF token: %d, want 303\n%s", resp.StatusCode, body)
	}
	if resp, body := b.do("POST", send, url.Values{"message": {"from the script"}}, "X-CSRF-Token", csrf); resp.StatusCode != http.StatusNoContent {
		t.Errorf("send from the page's script: %d, want 204\n%s", resp.StatusCode, body)
	}
	ms, err := c.Peek(ctx, "@crew:main", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	var contents []string
	for _, m := range ms {
		contents = append(contents, m.From+": "+m.Content)
	}
	joined := strings.Join(contents, "\n")
	if !strings.Contains(joined, "user: "+script) || !strings.Contains(joined, "user: from the script") || strings.Contains(joined, "no token") || strings.Contains(joined, "foreign") {
		t.Errorf("channel after the console's sends:\n%s", joined)
	}
	_, page = b.do("GET", "/console/team/crew/main", nil)
	if strings.Contains(page, `<script>alert`) || !strings.Contains(page, `&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;`) {
		t.Errorf("the team page does not escape a <script> message")
	}

	// Resume from the console; `list` sees it.
	if resp, body := b.do("POST", "/console/control", url.Values{"target": {"@crew:main"}, "action": {"resume"}, "back": {"/console/team/crew/main"}, "csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("resume: %d\n%s", resp.StatusCode, body)
	}
	if w, err := c.GetWorkflow(ctx, api.Target{Workflow: "crew", Tag: "main"}); err != nil || w.State != api.WorkflowRunning {
		t.Errorf("after the console's resume the workflow is %s, %v", w.State, err)
	}
	if resp, body := b.do("POST", "/console/control", url.Values{"target": {"@crew:main"}, "action": {"explode"}, "csrf": {csrf}}); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "use pause, resume or cancel") {
		t.Errorf("unknown action: %d %s", resp.StatusCode, body)
	}

	// Every view renders for this team.
	for _, p := range []string{"/console/", "/console/runs", "/console/runs?failed=true&target=%40crew", "/console/cost", "/console/plugins", "/console/docs/crew/main"} {
		if resp, body := b.do("GET", p, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", p, resp.StatusCode, body)
		}
	}
	if resp, body := b.do("GET", "/console/team/nope/main", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown team: %d, want 404\n%s", resp.StatusCode, body)
	}

	// Logging out ends the session.
	if resp, body := b.do("POST", "/console/logout", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusOK {
		t.Errorf("logout: %d\n%s", resp.StatusCode, body)
	}
	if resp, body := b.do("GET", "/console/", nil, "Cookie", "aw_console="+session.Value); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after logout: %d, want 401\n%s", resp.StatusCode, body)
	}
}
