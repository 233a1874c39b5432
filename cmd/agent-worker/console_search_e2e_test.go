package main

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// The console's search in a real browser against a real daemon (issue 30):
// the team page's box finds a message by a stemmed word, showing its kind
// and the word marked in its snippet; its link opens the channel at the
// message; a document is found too and opens; a malformed query shows
// the daemon's error beside the box instead of hits.
func TestE2EConsoleSearch(t *testing.T) {
	c := newCLI(t)
	c.ok("new", "worker", "--backend", "external") // starts the daemon and @global
	c.ok("send", "@global", "the database migration is finished <b>not bold</b>")
	c.ok("doc", "write", "@global", "--file", "plan.md", "We ship the quarterly roadmap on Friday.")
	b := openConsole(t, c)

	b.open("/console/team/global/main")
	search := func(q string) {
		b.t.Helper()
		b.wait("the search box", `!!document.querySelector("form.search input[name=q]")`)
		b.do("search "+q, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`(() => { const f = document.querySelector("form.search"); f.querySelector("input[name=q]").value = %s; f.requestSubmit() })()`, jsString(q))))
	}
	search("migrating")
	b.wait("the message hit", `(() => { const h = document.querySelector("#hits .hit.h-message"); return !!h &&
		h.querySelector(".tag").innerText === "message" && h.querySelector("mark")?.innerText === "migration" &&
		h.querySelector(".body").innerText.includes("<b>not bold</b>") && !h.querySelector(".body b") })()`)
	b.click("open the message", "#hits .hit.h-message a")
	b.wait("the channel at the message", `location.pathname === "/console/team/global/main" && /^#m\d+$/.test(location.hash) &&
		document.querySelector(location.hash)?.innerText.includes("migration is finished")`)

	search("roadmap")
	b.wait("the document hit", `(() => { const h = document.querySelector("#hits .hit.h-doc"); return !!h && h.querySelector("a").innerText === "plan.md" &&
		h.querySelector("mark")?.innerText === "roadmap" })()`)
	b.click("open the document", "#hits .hit.h-doc a")
	b.wait("the document", `location.pathname === "/console/docs/global/main/plan.md" && document.body.innerText.includes("quarterly roadmap")`)

	b.open("/console/team/global/main")
	search(`"unclosed`)
	b.wait("the error for a malformed query", `(() => { const e = document.getElementById("search-error"); return !!e &&
		e.innerText.includes("unclosed quote") && !document.getElementById("hits") &&
		document.querySelector("form.search input[name=q]").value === '"unclosed' })()`)
}
