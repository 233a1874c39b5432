package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
)

// withQuestions is fullAPI with GET /questions answering qs, and every
// target it was asked for recorded.
func withQuestions(t *testing.T, qs []api.Question, targets *[]string) http.Handler {
	full := fullAPI(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/questions" {
			full.ServeHTTP(w, r)
			return
		}
		if targets != nil {
			*targets = append(*targets, r.URL.Query().Get("target")+" all="+r.URL.Query().Get("all"))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.QuestionList{Questions: qs})
	})
}

// get serves one GET of a logged-in session and returns the body.
func get(t *testing.T, s *Server, h http.Handler, path string) (int, string) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: s.newSession()})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// panelOf is the "Needs you" section of a page.
func panelOf(t *testing.T, page string) string {
	t.Helper()
	i := strings.Index(page, `<section id="needs-you"`)
	if i < 0 {
		t.Fatalf("the page has no Needs you panel:\n%s", page)
	}
	j := strings.Index(page[i:], "</section>")
	return page[i : i+j]
}

// The panel shows each pending question with its agent, age, text,
// context, one button per option and a text box, and each approval with
// its exact action, Approve and Deny with a reason box; with nothing
// pending it is hidden, like the Problems box. Both pages show it; the
// team page asks for its team's questions only.
func TestNeedsYouPanelRenders(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	question := api.Question{ID: "q_1", Agent: "alice@crew:main", Kind: "question", Question: "pg or <b>sqlite</b>?",
		Options: []string{"pg", "sqlite"}, Context: "the team cannot agree", RunID: "run_7", State: "pending", CreatedAt: now.Add(-3 * time.Minute)}
	free := api.Question{ID: "q_3", Agent: "alice@crew:main", Kind: "question", Question: "what should the release be called?",
		Options: []string{}, State: "pending", CreatedAt: now}
	approval := api.Question{ID: "q_2", Agent: "bob@crew:main", Kind: "approval", Question: "run_shell: git push origin main",
		Options: []string{}, State: "pending", CreatedAt: now.Add(-90 * time.Minute)}
	cases := map[string]struct {
		qs        []api.Question
		want, not []string
	}{
		"a question with options": {qs: []api.Question{question},
			want: []string{`data-question="q_1"`, "asks you", "3m ago", "pg or &lt;b&gt;sqlite&lt;/b&gt;?", "the team cannot agree", `href="/console/runs/run_7"`,
				`<input type="hidden" name="answer" value="pg"><button class="b-option">pg</button>`,
				`<input type="hidden" name="answer" value="sqlite"><button class="b-option">sqlite</button>`,
				`placeholder="or your own answer"`, `<button class="b-answer">Answer</button>`, `action="/console/questions/q_1/answer"`},
			not: []string{"hidden>\n<h2>", "Approve", "Deny", "<b>sqlite</b>"}},
		"a question without options": {qs: []api.Question{free},
			want: []string{`data-question="q_3"`, "what should the release be called?", `placeholder="your answer"`, "b-answer"},
			not:  []string{"b-option", "Approve"}},
		"an approval": {qs: []api.Question{approval},
			want: []string{`data-question="q_2"`, "waits for your approval", "1h ago", `<pre class="action">run_shell: git push origin main</pre>`,
				`action="/console/questions/q_2/approve"`, `<button class="b-approve">Approve</button>`,
				`action="/console/questions/q_2/deny"`, `name="reason" placeholder="reason (optional)"`, `<button class="b-deny">Deny</button>`},
			not: []string{"hidden>\n<h2>", "b-option", "b-answer"}},
		"nothing pending": {qs: []api.Question{},
			want: []string{`<section id="needs-you" class="needs-you"`, "hidden>\n<h2>"},
			not:  []string{"data-question", "<form"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var targets []string
			s := New(Config{})
			h := s.Handler(withQuestions(t, tc.qs, &targets))
			for _, path := range []string{"/console/", "/console/team/crew/main"} {
				code, body := get(t, s, h, path)
				if code != http.StatusOK {
					t.Fatalf("GET %s: %d\n%s", path, code, body)
				}
				panel := panelOf(t, body)
				for _, want := range tc.want {
					if !strings.Contains(panel, want) {
						t.Errorf("GET %s: the panel lacks %q:\n%s", path, want, panel)
					}
				}
				for _, not := range tc.not {
					if strings.Contains(panel, not) {
						t.Errorf("GET %s: the panel shows %q:\n%s", path, not, panel)
					}
				}
				if len(tc.qs) > 0 && !strings.Contains(panel, `name="csrf" value="`) {
					t.Errorf("GET %s: the panel's forms carry no CSRF token:\n%s", path, panel)
				}
			}
			if diff := cmp.Diff([]string{" all=", "@crew:main all="}, targets); diff != "" {
				t.Errorf("GET /questions targets (-want +got):\n%s", diff)
			}
		})
	}
}

// The page's script refetches the panel's items alone: the team's, as
// list items; a target that is not a team is refused.
func TestNeedsYouFragment(t *testing.T) {
	t.Parallel()
	var targets []string
	s := New(Config{})
	h := s.Handler(withQuestions(t, []api.Question{{ID: "q_9", Agent: "alice@crew:main", Kind: "question", Question: "ship it?",
		Options: []string{"yes", "no"}, State: "pending", CreatedAt: time.Now()}}, &targets))
	code, body := get(t, s, h, "/console/needs-you?target="+url.QueryEscape("@crew:main"))
	if code != http.StatusOK || !strings.HasPrefix(strings.TrimSpace(body), `<li class="ask" data-question="q_9">`) ||
		!strings.Contains(body, "ship it?") || !strings.Contains(body, `name="back" value="/console/team/crew/main"`) || strings.Contains(body, "<section") {
		t.Errorf("GET /console/needs-you?target=@crew:main: %d\n%s", code, body)
	}
	if code, body := get(t, s, h, "/console/needs-you?target=alice%40crew"); code != http.StatusBadRequest || !strings.Contains(body, "give @workflow:tag") {
		t.Errorf("the fragment of an agent: %d\n%s", code, body)
	}
	if code, body := get(t, s, h, "/console/needs-you"); code != http.StatusOK || !strings.Contains(body, `name="back" value="/console/"`) {
		t.Errorf("the overview's fragment: %d\n%s", code, body)
	}
	if diff := cmp.Diff([]string{"@crew:main all=", " all="}, targets); diff != "" {
		t.Errorf("GET /questions targets (-want +got):\n%s", diff)
	}
}

// apiCall is one request the console made to the fake daemon.
type apiCall struct {
	Method, Path string
	Body         map[string]string
}

// Each button of the panel is one API call through the console's POST
// path: with the CSRF token (header from the script, form field without
// it), answered as "user (console)"; the API's refusal (answered
// already, unknown id) is what the page shows; without the token nothing
// is called.
func TestNeedsYouButtons(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		path, form string
		script     bool // sent by the page's script (X-CSRF-Token), not as a plain form
		noCSRF     bool
		status     int // the fake daemon's answer; 0 is 200
		wantCode   int
		wantCalls  []apiCall
		wantBody   string
	}{
		"an option": {path: "/console/questions/q_1/answer", form: "answer=pg&back=/console/team/crew/main", script: true, wantCode: http.StatusNoContent,
			wantCalls: []apiCall{{"POST", "/questions/q_1/answer", map[string]string{"answer": "pg", "by": "user (console)"}}}},
		"free text without the script": {path: "/console/questions/q_1/answer", form: "answer=maybe+later&back=/console/team/crew/main", wantCode: http.StatusSeeOther,
			wantCalls: []apiCall{{"POST", "/questions/q_1/answer", map[string]string{"answer": "maybe later", "by": "user (console)"}}},
			wantBody:  "/console/team/crew/main"},
		"approve": {path: "/console/questions/q_2/approve", form: "back=/console/", script: true, wantCode: http.StatusNoContent,
			wantCalls: []apiCall{{"POST", "/questions/q_2/approve", map[string]string{"by": "user (console)"}}}},
		"deny with a reason": {path: "/console/questions/q_2/deny", form: "reason=not+today&back=/console/", script: true, wantCode: http.StatusNoContent,
			wantCalls: []apiCall{{"POST", "/questions/q_2/deny", map[string]string{"reason": "not today", "by": "user (console)"}}}},
		"a foreign back is not followed": {path: "/console/questions/q_2/approve", form: "back=https://evil.example/", wantCode: http.StatusSeeOther,
			wantCalls: []apiCall{{"POST", "/questions/q_2/approve", map[string]string{"by": "user (console)"}}}, wantBody: `href="/console/"`},
		"answered already": {path: "/console/questions/q_1/answer", form: "answer=pg", script: true, status: http.StatusConflict, wantCode: http.StatusConflict,
			wantCalls: []apiCall{{"POST", "/questions/q_1/answer", map[string]string{"answer": "pg", "by": "user (console)"}}},
			wantBody:  "q_1 was answered already, by ops"},
		"an unknown id": {path: "/console/questions/q_0/approve", script: true, status: http.StatusNotFound, wantCode: http.StatusNotFound,
			wantCalls: []apiCall{{"POST", "/questions/q_0/approve", map[string]string{"by": "user (console)"}}}, wantBody: "no question q_0"},
		"no CSRF token": {path: "/console/questions/q_1/answer", form: "answer=pg", noCSRF: true, wantCode: http.StatusForbidden,
			wantBody: "no valid CSRF token"},
		"accept a workflow edit": {path: "/console/workflows/crew/main/accept", form: "back=/console/team/crew/main", script: true, wantCode: http.StatusNoContent,
			wantCalls: []apiCall{{"POST", "/workflows/crew/main/accept", nil}}},
		"not a button": {path: "/console/questions/q_1/delete", script: true, wantCode: http.StatusNotFound, wantBody: "answer, approve or deny"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var calls []apiCall
			fake := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body map[string]string
				_ = json.NewDecoder(r.Body).Decode(&body)
				mu.Lock()
				calls = append(calls, apiCall{r.Method, r.URL.Path, body})
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				switch tc.status {
				case http.StatusConflict:
					w.WriteHeader(tc.status)
					_ = json.NewEncoder(w).Encode(api.Errorf(api.CodeConflict, "q_1 was answered already, by ops at 2026-01-02 15:04:05: \"sqlite\""))
				case http.StatusNotFound:
					w.WriteHeader(tc.status)
					_ = json.NewEncoder(w).Encode(api.Errorf(api.CodeNotFound, "no question q_0"))
				default:
					_ = json.NewEncoder(w).Encode(api.Question{ID: "q_1", State: "answered"})
				}
			})
			s := New(Config{})
			h := s.Handler(fake)
			id := s.newSession()
			var csrf string
			for _, ss := range s.sessions {
				csrf = ss.csrf
			}
			form := tc.form
			if !tc.noCSRF && !tc.script {
				form += "&csrf=" + url.QueryEscape(csrf)
			}
			req := httptest.NewRequest("POST", tc.path, strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.script {
				req.Header.Set("X-CSRF-Token", csrf)
			}
			req.AddCookie(&http.Cookie{Name: cookieName, Value: id})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != tc.wantCode {
				t.Errorf("POST %s: %d, want %d\n%s", tc.path, rec.Code, tc.wantCode, body)
			}
			if tc.wantCode == http.StatusSeeOther {
				body = []byte(`href="` + rec.Header().Get("Location") + `"`)
			}
			if !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("POST %s answered without %q:\n%s", tc.path, tc.wantBody, body)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("API calls (-want +got):\n%s", diff)
			}
		})
	}
}

// A workflow edit that widens what runs may do waits in the panel as a
// diff of the policy, one + line each, with an Accept button that posts
// to the console's accept path; on a team's page only that team's.
func TestNeedsYouShowsAWideningEdit(t *testing.T) {
	t.Parallel()
	since := time.Now().UTC().Add(-2 * time.Minute)
	pending := api.Workflow{Name: "crew", Tag: "main", Target: "@crew", SourcePath: "/src/crew.yaml", State: api.WorkflowRunning, Members: []api.Member{},
		Pending: &contract.PendingEdit{Widens: []string{"agent alice: sandbox mode off: its runs are not confined", "agent alice: sandbox write adds /opt/<bin>"}, Since: since}}
	other := api.Workflow{Name: "ops", Tag: "main", Target: "@ops", State: api.WorkflowRunning, Members: []api.Member{},
		Pending: &contract.PendingEdit{Widens: []string{"agent bob: env adds TOKEN"}, Since: since}}
	full := withQuestions(t, []api.Question{}, nil)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/workflows" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(api.WorkflowList{Workflows: []api.Workflow{pending, other}})
			return
		}
		full.ServeHTTP(w, r)
	})
	s := New(Config{})
	handler := s.Handler(h)
	for path, want := range map[string][]string{
		"/console/": {`data-workflow="@crew"`, `<a href="/console/team/crew/main"><b>@crew</b></a>: an edit of its file waits for your approval`, "2m ago",
			"/src/crew.yaml was changed on disk", "+ agent alice: sandbox mode off: its runs are not confined\n+ agent alice: sandbox write adds /opt/&lt;bin&gt;\n",
			`action="/console/workflows/crew/main/accept"`, `<button class="b-approve">Accept</button>`, `data-workflow="@ops"`, "+ agent bob: env adds TOKEN"},
		"/console/team/crew/main": {`<b>@crew</b>: an edit`, `action="/console/workflows/crew/main/accept"`},
	} {
		code, body := get(t, s, handler, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, body)
		}
		panel := panelOf(t, body)
		if strings.Contains(panel, "hidden>\n<h2>") {
			t.Errorf("GET %s: the panel is hidden with an edit waiting", path)
		}
		for _, w := range want {
			if !strings.Contains(panel, w) {
				t.Errorf("GET %s: the panel lacks %q:\n%s", path, w, panel)
			}
		}
		if path != "/console/" && strings.Contains(panel, "@ops") {
			t.Errorf("GET %s: the panel shows another team's edit:\n%s", path, panel)
		}
	}
}
