package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// effortTeam is a workflow whose one member, worker, is driven from the
// command line (`effort next --agent`) as an outside agent would be.
const effortTeam = `name: crew
agents:
  worker:
    backend: external
`

// The console shows efforts (issue 43) in a real browser against a real
// daemon: the team page shows the worker's effort with its phase and
// links to the effort's page, whose timeline has every phase of the
// skill; a step taken meanwhile shows up without a reload, with its
// proof and notes, a <script> in them shown as text that never runs;
// the effort's log is one of its artifacts and opens read-only; a path
// out of the effort's directory opens nothing.
func TestE2EConsoleEffort(t *testing.T) {
	c := newCLI(t)
	skills := filepath.Join(c.home, ".agent-worker", "skills", "small")
	if err := os.MkdirAll(skills, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skills, "SKILL.md"), []byte(smallSkill), 0o644); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	file := filepath.Join(project, "crew.yaml")
	if err := os.WriteFile(file, []byte(effortTeam), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(project, "src")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "secret.md"), []byte("not the effort's"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.ok("start", file, "--background")
	c.ok("effort", "start", "--agent", "worker@crew", dir, "small")
	b := openConsole(t, c)

	b.open("/console/team/crew/main")
	b.wait("the worker's effort on the team page", `(() => { const e = document.querySelector('tr[data-agent="worker@crew"] .effort'); return !!e &&
		e.innerText.includes("small #1") && e.innerText.includes("phase 1/2 plan") && e.innerText.includes("heartbeat") })()`)
	b.click("open the effort", `tr[data-agent="worker@crew"] .effort a`)
	b.wait("the effort page's timeline", `location.pathname === "/console/efforts/effort-1" &&
		document.querySelector("#effort-head h1").innerText.includes("small #1") &&
		[...document.querySelectorAll("#timeline .phase")].map(p => p.querySelector(".phase-name").innerText + " " + p.querySelector(".state").innerText).join(", ") === "plan current, verify to come"`)
	b.wait("the live stream", `document.documentElement.dataset.live === "on"`)
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__sameLoad = true`))

	// A step from the command line: the page follows it.
	c.ok("effort", "next", "--agent", "worker@crew", "--proof", "plan_summary=the small way <script>window.__owned = 1</script>",
		"--notes", "**chose** the small way <script>window.__owned = 1</script>")
	b.wait("the step on the page", `[...document.querySelectorAll("#timeline .phase")].map(p => p.querySelector(".state").innerText).join(",") === "done,current" &&
		document.querySelector('#timeline .phase[data-phase="1"] .proof').innerText === "plan_summary: the small way <script>window.__owned = 1</script>" &&
		document.querySelector('#timeline .phase[data-phase="1"] .notes strong').innerText === "chose" &&
		document.querySelector('#timeline .phase[data-phase="1"] .notes').innerText.includes("<script>window.__owned = 1</script>")`)
	b.sameLoad("after the step")
	var owned bool
	b.eval("no script ran", `window.__owned !== undefined || !!document.querySelector("#main script")`, &owned)
	if owned {
		t.Error("a <script> from the effort's proof or notes is in the page")
	}

	// effort_log writes 1_SMALL_LOG.md: an artifact, opened read-only.
	c.ok("effort", "log", "--agent", "worker@crew", "kept <b>x</b> small")
	b.click("open the log", `#artifacts a[href="/console/efforts/effort-1/artifacts/1_SMALL_LOG.md"]`)
	b.wait("the log", `location.pathname === "/console/efforts/effort-1/artifacts/1_SMALL_LOG.md" &&
		document.querySelector("article.markdown").innerText.includes("kept <b>x</b> small") && !document.querySelector("article.markdown b")`)

	// Only the effort's own files: no path out of its directory.
	var status []int
	b.eval("paths out of the effort", `Promise.all(["..%2Fsecret.md", "..%2F..%2Fetc%2Fpasswd", "secret.md"].map(n =>
		fetch("/console/efforts/effort-1/artifacts/" + n).then(r => r.status)))`, &status)
	for i, s := range status {
		if s != 404 {
			t.Errorf("path out of the effort #%d: %d, want 404", i, s)
		}
	}
}
