package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agent-worker/agent-worker/host/api"
)

// consoleBrowser is a headless chromium logged in to the console of c's
// daemon, with the steps a console test takes; a failure's report holds
// the page's text, its console (script errors, CSP refusals) and the end
// of the daemon's log.
type consoleBrowser struct {
	t    *testing.T
	c    *cli
	ctx  context.Context
	base string   // the daemon's URL
	log  *pageLog // what the page said in its console
}

// openConsole starts chromium and logs in through `console --no-open
// --json`; the daemon must be running.
func openConsole(t *testing.T, c *cli) *consoleBrowser {
	t.Helper()
	exe := chromium(t)
	var login api.ConsoleLogin
	if err := json.Unmarshal([]byte(c.ok("console", "--no-open", "--json")), &login); err != nil {
		t.Fatalf("console --json: %v", err)
	}
	ctx, log := startBrowser(t, exe)
	b := &consoleBrowser{t: t, c: c, ctx: ctx, log: log, base: login.URL[:strings.Index(login.URL, "/console/")]}
	b.do("log in", chromedp.Navigate(login.URL))
	return b
}

// open navigates to a console path and waits for its live stream.
func (b *consoleBrowser) open(path string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.base+path))
	b.wait("the live stream of "+path, `document.documentElement.dataset.live === "on"`)
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__sameLoad = true`))
}

func (b *consoleBrowser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func (b *consoleBrowser) eval(what, js string, out any) {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](js, chromedp.EvalAwaitPromise))
	if err == nil {
		err = json.Unmarshal(v, out)
	}
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// wait waits for a page condition: the page changes on events from the
// daemon, so the test waits for the change itself.
func (b *consoleBrowser) wait(what, predicate string) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var err error
	for {
		_, err = chromedp.Run(b.ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		// A click that navigates destroys the page the poll ran in: poll
		// again in the new one.
		if err == nil || time.Now().After(deadline) || b.ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		failWait(b.t, b.ctx, b.c.home, b.log, what, err)
	}
}

// click clicks the first element that matches selector, found and clicked
// in one step in the page: the live views replace their content on
// events, so a node looked up first may be gone by the click.
func (b *consoleBrowser) click(what, selector string) {
	b.t.Helper()
	sel := jsString(selector)
	b.wait(what, fmt.Sprintf(`!!document.querySelector(%s)`, sel))
	var clicked bool
	b.eval(what, fmt.Sprintf(`(() => { const el = document.querySelector(%s); if (!el) return false; el.click(); return true })()`, sel), &clicked)
	if !clicked {
		b.t.Fatalf("%s: nothing matches %s", what, selector)
	}
}

// sameLoad fails the test if the page was reloaded since open.
func (b *consoleBrowser) sameLoad(what string) {
	b.t.Helper()
	var same bool
	b.eval(what, `window.__sameLoad === true`, &same)
	if !same {
		b.t.Errorf("%s: the page reloaded instead of updating in place", what)
	}
}

// needsYouTeam: alice asks the owner when told to start and replies to
// the answer; bob's channel_send waits for approval.
const needsYouTeam = `name: crew
agents:
  alice:
    backend: mock
    config:
      script:
        - {tool: ask_user, args: {question: "pg or sqlite?", options: [pg, sqlite], context: "the team cannot agree"}, when: {text: start}}
        - {result: "asked {{last.id}}", when: {text: start}}
        - {result: "got: {{inbox_summary}}", when: {text: answer to}}
  bob:
    backend: mock
    approvals: {tools: [channel_send]}
    config:
      script:
        - {tool: channel_send, args: {message: "deploying now"}}
        - result: bob done
`

// The console's "Needs you" panel in a real browser against a real daemon
// and mock agents (issue 28, item 3): alice's ask_user question appears on
// the team page without a reload, a click on an option answers it (the
// CLI sees it answered with that option by the console) and alice's reply
// to the answer reaches the channel; a stale copy of the answered item
// shows the daemon's conflict in the panel's error line; bob's gated
// channel_send appears on the overview and runs once Approve is clicked;
// his next one is denied from the team page with a reason.
func TestE2EConsoleNeedsYou(t *testing.T) {
	c := newCLI(t)
	file := filepath.Join(t.TempDir(), "crew.yaml")
	writeFile(t, file, needsYouTeam)
	c.ok("list") // starts the daemon
	c.ok("start", file, "--background")
	b := openConsole(t, c)
	peek := func() string { return c.ok("peek", "@crew", "-n", "200") }

	// The team page: nothing needs you, so the panel is hidden.
	b.open("/console/team/crew/main")
	var hidden bool
	b.eval("the empty panel", `document.getElementById("needs-you").hidden && !document.querySelector("#needs-you [data-question]")`, &hidden)
	if !hidden {
		t.Error("the Needs you panel shows with nothing pending")
	}

	// alice asks: the question, its context and one button per option
	// appear without a reload.
	c.ok("send", "alice@crew", "start")
	b.wait("alice's question in the panel", `(() => { const p = document.getElementById("needs-you"); const q = p.querySelector("[data-question]");
		return !p.hidden && !!q && q.innerText.includes("alice asks you") && q.innerText.includes("pg or sqlite?") && q.innerText.includes("the team cannot agree") &&
			[...q.querySelectorAll("button.b-option")].map(b => b.innerText).join(",") === "pg,sqlite" && !!q.querySelector("input[name=answer]:not([type=hidden])") })()`)
	qs := c.questionsJSON("@crew")
	if len(qs) != 1 {
		t.Fatalf("questions @crew = %+v, want alice's one", qs)
	}
	q := qs[0]
	var shownID string
	b.eval("the item's id", `document.querySelector("#needs-you [data-question]").dataset.question`, &shownID)
	if shownID != q.ID {
		t.Errorf("the panel shows %s, want %s", shownID, q.ID)
	}
	// A screenshot of the panel, kept as a test artefact (go test -artifacts).
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "console-needs-you.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	// Keep a copy of the item as it is now, for the conflict below.
	b.do("copy the item", chromedp.Evaluate[chromedp.Void](`window.__stale = document.querySelector("#needs-you [data-question]").cloneNode(true)`))

	// A click on "sqlite" answers it; the item leaves the panel.
	b.click("answer sqlite", `#needs-you form:has(input[name=answer][value=sqlite]) button`)
	b.wait("the answered question to leave", `!document.querySelector("#needs-you [data-question]") && document.getElementById("needs-you").hidden`)
	if all := c.questionsJSON("@crew", "--all"); len(all) != 1 || all[0].State != "answered" || all[0].Answer != "sqlite" || all[0].AnsweredBy != "user (console)" {
		t.Errorf("questions --all after the click = %+v, want %s answered sqlite by user (console)", all, q.ID)
	}
	c.waitFor("alice's reply to the answer", func() bool {
		return strings.Contains(peek(), "[alice] got: user: alice answer to "+q.ID)
	})
	b.wait("alice's reply on the page", `document.querySelector("#messages").innerText.includes("got: user: alice answer to")`)
	b.sameLoad("after the answer")

	// A page that had not caught up (here: the item put back as it was)
	// answers again: the daemon's conflict shows in the panel's error
	// line, naming who answered, and the stale item goes. The item is put
	// back and clicked in one script: the panel's own refresh (on the
	// next team event) would otherwise take it away before a click.
	b.do("put the stale item back and answer pg on it", chromedp.Evaluate[chromedp.Void](
		`document.getElementById("needs-you-items").appendChild(window.__stale); document.getElementById("needs-you").hidden = false;
		window.__stale.querySelector("form:has(input[name=answer][value=pg]) button").click()`))
	b.wait("the conflict in the panel", `(() => { const e = document.getElementById("needs-you-error");
		return !e.hidden && e.innerText.includes("answered already, by user (console)") && !document.getElementById("needs-you").hidden })()`)
	b.wait("the stale item to go", `!document.querySelector("#needs-you [data-question]")`)
	if all := c.questionsJSON("@crew", "--all"); len(all) != 1 || all[0].Answer != "sqlite" {
		t.Errorf("the stale answer changed the question: %+v", all)
	}

	// The overview: bob's gated channel_send waits, shown with the exact
	// action and his team; Approve lets it run.
	b.open("/console/")
	c.ok("send", "bob@crew", "deploy")
	approval := c.pendingApproval("bob@crew")
	b.wait("bob's approval on the overview", `(() => { const q = document.querySelector('#needs-you [data-question=`+jsString(approval.ID)+`]');
		return !!q && q.innerText.includes("bob@crew waits for your approval") && q.querySelector("pre.action").innerText.includes("channel_send") &&
			!!q.querySelector('a[href="/console/team/crew/main"]') && !!q.querySelector("button.b-approve") && !!q.querySelector("button.b-deny") })()`)
	b.click("approve", `#needs-you button.b-approve`)
	b.wait("the approval to leave", `!document.querySelector("#needs-you [data-question]") && document.getElementById("needs-you").hidden`)
	c.waitFor("bob's approved message", func() bool { return strings.Contains(peek(), "[bob] deploying now") })
	for _, x := range c.questionsJSON("bob@crew", "--all") {
		if x.ID == approval.ID && (x.State != "approved" || x.AnsweredBy != "user (console)") {
			t.Errorf("the approval after the click: %+v, want approved by user (console)", x)
		}
	}
	b.sameLoad("after the approval")

	// The team page: bob's next one is denied with a reason; his message
	// is not sent again.
	b.open("/console/team/crew/main")
	c.ok("send", "bob@crew", "deploy again")
	approval = c.pendingApproval("bob@crew")
	b.wait("bob's second approval", `!!document.querySelector('#needs-you [data-question=`+jsString(approval.ID)+`] button.b-deny')`)
	b.do("write a reason", chromedp.SetValue(chromedp.CSS(`#needs-you input[name=reason]`), "not on a Friday"))
	b.click("deny", `#needs-you button.b-deny`)
	b.wait("the denied approval to leave", `!document.querySelector("#needs-you [data-question]") && document.getElementById("needs-you").hidden`)
	// A run that sent nothing to the channel posts its result: only the
	// denied one does.
	c.waitFor("bob's denied run to end", func() bool { return strings.Contains(peek(), "[bob] bob done") })
	for _, x := range c.questionsJSON("bob@crew", "--all") {
		if x.ID == approval.ID && (x.State != "denied" || x.Answer != "not on a Friday" || x.AnsweredBy != "user (console)") {
			t.Errorf("the approval after Deny: %+v, want denied by user (console) with the reason", x)
		}
	}
	if n := strings.Count(peek(), "[bob] deploying now"); n != 1 {
		t.Errorf("bob's message was sent %d times, want once (the denied one not)", n)
	}
	b.wait("the denial in the channel", `document.querySelector("#messages").innerText.includes("user (console) denied `+approval.ID+`")`)
	b.sameLoad("after the denial")
}
