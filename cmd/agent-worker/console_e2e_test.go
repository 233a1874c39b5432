package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agent-worker/agent-worker/host/api"
)

// chromium returns a headless-capable Chromium or Chrome. Without one the
// test is skipped, saying how to get it, unless AGENT_WORKER_E2E_BROWSER=1
// (set by make test-e2e, which installs Debian's chromium): then it fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("AGENT_WORKER_E2E_BROWSER") == "1" {
		t.Fatal("AGENT_WORKER_E2E_BROWSER=1 but no chromium on PATH: install Debian's chromium (make test-e2e does)")
	}
	t.Skip("no chromium on PATH: run make test-e2e, which installs Debian's chromium")
	return ""
}

// consoleTeam is a team on mock backends: alice answers the kickoff once
// the test opens the gate (so her reply lands while the page is open),
// bob answers whatever reaches him.
const consoleTeam = `name: crew
agents:
  alice:
    backend: mock
    system_prompt: You review plans.
    config:
      script:
        - shell: "while [ ! -e gate ]; do sleep 0.02; done"
          when: {from: system}
        - reply: "@user the plan looks sound, {{first_sender}}"
          when: {from: system}
        - tool: team_doc_append
          args: {file: notes.md, content: "# Review\n\n- alice: the plan looks **sound**\n"}
          when: {from: system}
        - usage: {input: 1200, output: 340, cost: 0.0123}
        - result: alice done.
  bob:
    backend: mock
kickoff: "@alice please review the plan for the console"
`

// The web console in a real browser, against a real daemon running mock
// agents: log in through the one-time link, watch the kickoff and a reply
// arrive without a reload, send from the page, pause and resume, read a
// run's transcript; and the security promises: a POST without the CSRF
// token is refused, the cookie is locked down, a login link works once, a
// <script> message is text.
func TestE2EConsoleBrowser(t *testing.T) {
	exe := chromium(t)
	c := newCLI(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "crew.yaml")
	if err := os.WriteFile(file, []byte(consoleTeam), 0o644); err != nil {
		t.Fatal(err)
	}
	c.ok("list") // starts the daemon

	// `console --no-open` prints the link; --json gives it to scripts.
	var login api.ConsoleLogin
	if err := json.Unmarshal([]byte(c.ok("console", "--no-open", "--json")), &login); err != nil || !strings.Contains(login.URL, "/console/login?code=") {
		t.Fatalf("console --json: %+v, %v", login, err)
	}
	text := c.ok("console", "--no-open")
	if !strings.Contains(text, "works once") || !strings.Contains(text, "/console/login?code=") {
		t.Errorf("console prints:\n%s", text)
	}
	base := login.URL[:strings.Index(login.URL, "/console/")]

	ctx, pageLog := startBrowser(t, exe)
	must := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(what, js string, out any) {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](js, chromedp.EvalAwaitPromise))
		if err == nil {
			err = json.Unmarshal(v, out)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// waitJS waits for a page condition: the page changes on events from
	// the daemon, so the test waits for the change itself.
	waitJS := func(what, predicate string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		var err error
		for {
			_, err = chromedp.Run(ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
			// A click that navigates destroys the page the poll ran in
			// ("Cannot find context", "Inspected target navigated"): poll
			// again in the new one.
			if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			failWait(t, ctx, c.home, pageLog, what, err)
		}
	}
	// click clicks the first element that matches selector, found and
	// clicked in one step in the page: the live views replace their rows
	// on events, so a node looked up first may be gone by the click.
	click := func(what, selector string) {
		t.Helper()
		sel, _ := json.Marshal(selector)
		waitJS(what, fmt.Sprintf(`!!document.querySelector(%s)`, sel))
		var clicked bool
		eval(what, fmt.Sprintf(`(() => { const el = document.querySelector(%s); if (!el) return false; el.click(); return true })()`, sel), &clicked)
		if !clicked {
			t.Fatalf("%s: nothing matches %s", what, selector)
		}
	}

	// Log in: the link sets the session cookie and lands on the overview,
	// with the code gone from the address bar.
	must("log in", chromedp.Navigate(login.URL))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || loc != base+"/console/" {
		t.Fatalf("after login the browser is at %q (%v), want %s/console/", loc, err, base)
	}
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/console/"}})
	if err != nil {
		t.Fatal(err)
	}
	var session *network.Cookie
	for _, ck := range cookies.Cookies {
		if ck.Name == "aw_console" {
			session = ck
		}
	}
	if session == nil || !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict || session.Path != "/console" || session.Secure {
		t.Fatalf("session cookie = %+v, want HttpOnly, SameSite=Strict, Path=/console, not Secure on http", session)
	}
	// A second visit of the same link is refused.
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(login.URL))
	if err != nil || resp.Status != 403 {
		t.Fatalf("reused login link: %v %v, want 403", resp, err)
	}
	waitJS("the reused link's explanation", `document.body.innerText.includes("works once")`)

	// The overview is live: a team started now shows up with its kickoff
	// without a reload.
	must("overview", chromedp.Navigate(base+"/console/"))
	must("mark the page", chromedp.Evaluate[chromedp.Void](`window.__sameLoad = true`))
	c.ok("start", file, "--background")
	waitJS("the team and its kickoff on the overview", `document.body.innerText.includes("@crew") && document.body.innerText.includes("please review the plan")`)
	var same bool
	eval("no reload", `window.__sameLoad === true`, &same)
	if !same {
		t.Error("the overview reloaded instead of updating in place")
	}

	// The team page: the kickoff is there and alice is running (held at
	// the gate). A message sent from the page reaches the channel (peek),
	// and bob's reply appears without a reload.
	click("open the team", `a[href="/console/team/crew/main"]`)
	waitJS("the team page with the kickoff", `!!document.querySelector("#messages") && document.querySelector("#messages").innerText.includes("please review the plan")`)
	waitJS("the live stream", `document.documentElement.dataset.live === "on"`)
	waitJS("alice running", `document.querySelector('tr[data-agent="alice@crew"]').innerText.includes("running")`)
	must("mark the team page", chromedp.Evaluate[chromedp.Void](`window.__sameLoad = true`))
	must("send", chromedp.SetValue(chromedp.CSS(`#send textarea`), "@bob hello from the browser"), chromedp.Click(chromedp.CSS(`#send button`)))
	waitJS("the sent message", `document.querySelector("#messages").innerText.includes("hello from the browser")`)
	waitJS("bob's reply", `document.querySelector("#messages").innerText.includes("[bob] Processed")`)
	if out := c.ok("peek", "@crew", "-n", "20"); !strings.Contains(out, "user") || !strings.Contains(out, "hello from the browser") {
		t.Errorf("peek does not show the message sent from the page:\n%s", out)
	}
	// A <script> in a message is shown as text and never runs.
	c.ok("send", "@crew", `<script>window.__owned = 1</script><img src=x onerror="window.__owned = 1"> @nobody`)
	waitJS("the script message as text", `document.querySelector("#messages").innerText.includes("<script>window.__owned = 1</script>")`)
	eval("no reload, nothing ran", `window.__sameLoad === true && window.__owned === undefined`, &same)
	if !same {
		t.Error("the team page reloaded, or a <script> from the channel ran")
	}

	// Alice's run in flight: its page follows the transcript live until
	// the run ends.
	click("open alice's run", `tr[data-agent="alice@crew"] a[href^="/console/runs/run_"]`)
	waitJS("the live run page", `!!document.querySelector(".live") && document.documentElement.dataset.live === "on"`)
	must("mark the run page", chromedp.Evaluate[chromedp.Void](`window.__sameLoad = true`))
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitJS("the run's end on its page", `document.querySelector("#transcript").innerText.includes("alice done.") && document.querySelector("#run-head h1").innerText.includes("succeeded")`)
	eval("no reload", `window.__sameLoad === true`, &same)
	if !same {
		t.Error("the run page reloaded instead of following the run")
	}
	var transcript string
	eval("transcript", `document.querySelector("main").textContent`, &transcript)
	for _, want := range []string{"you review plans.", "please review the plan", "tool call", "team_doc_append", "tool result", "1200 tokens in, 340 out", "$0.0123", "alice done."} {
		if !strings.Contains(strings.ToLower(transcript), want) {
			t.Errorf("the run page lacks %q:\n%s", want, transcript)
		}
	}
	must("back to the team", chromedp.Navigate(base+"/console/team/crew/main"))
	waitJS("alice's reply", `document.querySelector("#messages").innerText.includes("the plan looks sound")`)
	waitJS("alice idle again", `document.querySelector('tr[data-agent="alice@crew"]').innerText.includes("idle")`)

	// A full-page screenshot of the team page, kept as a test artefact
	// (go test -artifacts). The README's picture is TestE2EConsoleScreenshot's.
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "console-team.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	// The team page's weight: its HTML, script and style sheet.
	var weight struct{ HTML, JS, CSS int }
	eval("page weight", `Promise.all([location.href, "/console/static/console.js", "/console/static/console.css"].map(u => fetch(u).then(r => r.text()).then(s => new Blob([s]).size))).then(([h, j, c]) => ({HTML: h, JS: j, CSS: c}))`, &weight)
	t.Logf("team page weight: HTML %d B + JS %d B + CSS %d B = %d B", weight.HTML, weight.JS, weight.CSS, weight.HTML+weight.JS+weight.CSS)

	// The channel follows new messages to the bottom, and stops following
	// once the reader scrolls up (a "new messages" button appears).
	for i := range 30 {
		c.ok("send", "@crew", fmt.Sprintf("filler line %d for scrolling", i))
	}
	waitJS("the fillers at the bottom", `document.querySelector("#messages").innerText.includes("filler line 29") && (() => { const ch = document.querySelector("#channel"); return ch.scrollHeight > ch.clientHeight && ch.scrollHeight - ch.scrollTop - ch.clientHeight < 40; })()`)
	must("scroll up", chromedp.Evaluate[chromedp.Void](`document.querySelector("#channel").scrollTop = 0`))
	c.ok("send", "@crew", "a line while the reader is up")
	waitJS("the line while scrolled up", `document.querySelector("#messages").innerText.includes("a line while the reader is up")`)
	var kept struct {
		Top   int
		Shown bool
	}
	eval("scroll position", `({Top: document.querySelector("#channel").scrollTop, Shown: !document.querySelector("#newer").hidden})`, &kept)
	if kept.Top != 0 || !kept.Shown {
		t.Errorf("after scrolling up, a new message moved the channel to %d (want 0) or showed no new-messages button (%v)", kept.Top, kept.Shown)
	}

	// A POST without the CSRF token is refused and posts nothing.
	var status int
	eval("POST without CSRF", `fetch("/console/team/crew/main/send", {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "message=forged"}).then(r => r.status)`, &status)
	if status != 403 {
		t.Errorf("POST without the CSRF token: %d, want 403", status)
	}
	if out := c.ok("peek", "@crew", "-n", "50"); strings.Contains(out, "forged") {
		t.Errorf("a forged POST reached the channel:\n%s", out)
	}

	// Pause alice, then the team, from the page; list and workflows agree.
	click("pause alice", `tr[data-agent="alice@crew"] .b-pause`)
	waitJS("alice paused on the page", `document.querySelector('tr[data-agent="alice@crew"]') && document.querySelector('tr[data-agent="alice@crew"]').innerText.includes("paused")`)
	for _, a := range c.listJSON() {
		if a.Name == "alice" && a.State != api.AgentPaused {
			t.Errorf("list after pausing alice in the console: %s", a.State)
		}
	}
	click("pause the team", `#team-head .b-pause`)
	waitJS("the team paused on the page", `document.querySelector("#team-head h1").innerText.includes("paused")`)
	var wl api.WorkflowList
	if err := json.Unmarshal([]byte(c.ok("workflows", "--json")), &wl); err != nil {
		t.Fatal(err)
	}
	for _, w := range wl.Workflows {
		if w.Name == "crew" && w.State != api.WorkflowPaused {
			t.Errorf("workflows after pausing in the console: %s", w.State)
		}
	}
	click("resume the team", `#team-head .b-resume`)
	waitJS("the team running", `document.querySelector("#team-head h1").innerText.includes("running")`)

	// The runs list filters by agent and leads to the same transcript.
	must("runs", chromedp.Navigate(base+"/console/runs?target="+"alice%40crew"))
	click("open the run", `table.runs tbody tr:last-child a`)
	waitJS("the transcript", `document.querySelector("#transcript") && document.querySelector("#transcript").innerText.includes("team_doc_append")`)

	// The other views render with this team.
	for path, want := range map[string]string{"/console/cost": "Per agent", "/console/plugins": "mock", "/console/docs/crew/main": "notes.md", "/console/docs/crew/main/notes.md": "the plan looks sound"} {
		must(path, chromedp.Navigate(base+path))
		waitJS(path, `document.body.innerText.includes(`+jsString(want)+`)`)
	}

	// Sessions end with the daemon: after `stop --all` and a new daemon,
	// the browser's cookie (cookies ignore the port) opens nothing.
	c.ok("stop", "--all")
	c.ok("list") // a new daemon
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = chromedp.Run(ctx, chromedp.NavigateResponse(d.URL()+"/console/"))
	if err != nil || resp.Status != 401 {
		t.Errorf("the old session on a new daemon: %v %v, want 401", resp, err)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pageLog is what a page said in its console (script errors, CSP
// refusals, console calls), for a failure's report; chromedp's listener
// appends to it.
type pageLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *pageLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

func (l *pageLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// startBrowser starts chromium (exe) for the test and returns its page's
// context, bounded by 3 minutes, and what the page says in its console.
func startBrowser(t *testing.T, exe string) (context.Context, *pageLog) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900), chromedp.Flag("disable-dev-shm-usage", true))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	// The first Run starts the browser and must not carry a deadline.
	if err := chromedp.Do(browser, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(browser, 3*time.Minute)
	t.Cleanup(cancel)
	log := &pageLog{}
	if err := chromedp.Listen(ctx, func(ev any) {
		var line string
		switch e := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			line = "exception: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				line += " " + e.ExceptionDetails.Exception.Description
			}
		case *cdplog.EventEntryAdded:
			line = string(e.Entry.Level) + ": " + e.Entry.Text
		case *cdpruntime.EventConsoleAPICalled:
			for _, a := range e.Args {
				line += " " + string(a.Value)
			}
			line = "console." + string(e.Type) + ":" + line
		default:
			return
		}
		log.add(line)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	return ctx, log
}

// failWait fails a wait for a page condition with what the page shows,
// what it logged and the end of the daemon's log.
func failWait(t *testing.T, ctx context.Context, home string, log *pageLog, what string, err error) {
	t.Helper()
	body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	daemonLog, _ := os.ReadFile(filepath.Join(home, "logs", "daemon.log"))
	if len(daemonLog) > 4000 {
		daemonLog = daemonLog[len(daemonLog)-4000:]
	}
	t.Fatalf("waiting for %s: %v\npage:\n%s\nconsole:\n%s\ndaemon log:\n%s", what, err, body, log, daemonLog)
}
