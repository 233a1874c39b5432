package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// devTeamRepo sets up what examples/dev-team/try.sh does (a git repository
// on main with a README, the project's test.sh and the example's
// team.yaml) but with `approvals: {integrate: true}` added to the team, so
// that merging into main waits for the owner. It returns the team file.
func devTeamRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("needs the git program, which is not installed: %v", err)
	}
	example, err := os.ReadFile("../../examples/dev-team/team.yaml")
	if err != nil {
		t.Fatal(err)
	}
	team := strings.Replace(string(example), "\nagents:\n", "\napprovals: {integrate: true}\nagents:\n", 1)
	if team == string(example) {
		t.Fatal("examples/dev-team/team.yaml has no top-level agents: line to put the approvals before")
	}
	repo := t.TempDir()
	gitE2E(t, repo, "init", "-q", "-b", "main")
	gitE2E(t, repo, "config", "user.name", "dev-team example")
	gitE2E(t, repo, "config", "user.email", "dev-team@example.invalid")
	file := filepath.Join(repo, "team.yaml")
	writeFile(t, file, team)
	writeFile(t, filepath.Join(repo, "README.md"), "# greeter\n\nScripts that greet.\n")
	writeFile(t, filepath.Join(repo, ".gitignore"), ".workflow/\n")
	writeFile(t, filepath.Join(repo, "test.sh"), `#!/bin/sh
for f in *.sh; do
  [ "$f" = test.sh ] && continue
  out=$(sh "$f") || { echo "$f failed"; exit 1; }
  [ -n "$out" ] || { echo "$f printed nothing"; exit 1; }
  echo "$f: $out"
done
`)
	gitE2E(t, repo, "add", ".")
	gitE2E(t, repo, "commit", "-q", "-m", "start the greeter")
	return file
}

// The README's picture of the console (make screenshot writes it to
// docs/console.png): the dev-team example at work on mock backends, with
// merging into main behind the owner's approval. The planner splits the
// work into three tasks, alice and bob commit theirs, and the planner's
// first integrate (alice's branch) waits in the Needs-you panel; approved
// from the page, it goes through the merge queue and lands on main while
// the second one (bob's) waits. The page then shows what the picture is
// for, and the test asserts it so the picture cannot rot: the team's
// channel, its three members, the task board, the merge queue and the
// pending approval. Run by make screenshot (AGENT_WORKER_SCREENSHOT=path)
// and make test-e2e (AGENT_WORKER_E2E_BROWSER=1); TestE2EConsoleBrowser
// and TestE2EConsoleNeedsYou cover the console for every run.
func TestE2EConsoleScreenshot(t *testing.T) {
	shot := os.Getenv("AGENT_WORKER_SCREENSHOT")
	if shot == "" && os.Getenv("AGENT_WORKER_E2E_BROWSER") != "1" {
		t.Skip("the README's picture of the console: run by make screenshot (AGENT_WORKER_SCREENSHOT=path) and make test-e2e (AGENT_WORKER_E2E_BROWSER=1)")
	}
	file := devTeamRepo(t)
	c := newCLI(t)
	c.ok("list") // starts the daemon
	b := openConsole(t, c)
	// Wide enough for the members' table beside the channel, tall enough
	// for the channel to show the team's story.
	b.do("the picture's size", chromedp.EmulateViewport(1440, 1100))
	b.open("/console/")
	c.ok("start", file, "--background")
	b.open("/console/team/dev-team/main")

	// The planner's first integrate (alice's branch) waits for the owner;
	// Approve on the page lets it go into the merge queue.
	first := c.pendingApproval("planner@dev-team")
	b.wait("alice's integration in the Needs-you panel", `(() => { const q = document.querySelector('#needs-you [data-question=`+jsString(first.ID)+`]');
		return !!q && q.innerText.includes("planner waits for your approval") && q.querySelector("pre.action").innerText.includes("alice") })()`)
	b.click("approve alice's integration", `#needs-you [data-question=`+jsString(first.ID)+`] button.b-approve`)

	// Then bob's waits, while alice's lands on main.
	var second string
	c.waitFor("bob's integration to wait for approval", func() bool {
		for _, q := range c.questionsJSON("planner@dev-team") {
			if q.Kind == "approval" && q.State == "pending" && q.ID != first.ID {
				second = q.ID
				return true
			}
		}
		return false
	})
	b.wait("the team at work on the page", `(() => {
		const text = s => (document.querySelector(s) || {innerText: ""}).innerText;
		const row = a => text('tr[data-agent="'+a+'@dev-team"]');
		const q = document.querySelector('#needs-you [data-question=`+jsString(second)+`]');
		return !document.getElementById("needs-you").hidden && !!q && q.querySelector("pre.action").innerText.includes("bob") &&
			!document.querySelector('#needs-you [data-question=`+jsString(first.ID)+`]') &&
			text("#messages").includes("split the work") && text("#messages").includes("mq-1 landed on main") &&
			row("planner").includes("running") && row("alice").includes("idle") && row("bob").includes("idle") &&
			[...document.querySelectorAll("table.tasks tbody tr")].length === 3 &&
			[...document.querySelectorAll("table.tasks tr.t-completed")].length === 2 &&
			text("table.queue").includes("landed") })()`)
	b.sameLoad("the team page")

	// What the picture shows, in words.
	var page struct{ Channel, Members, Tasks, Queue, NeedsYou string }
	b.eval("the page", `({Channel: document.querySelector("#messages").innerText, Members: document.querySelector("#members table.list").innerText,
		Tasks: document.querySelector("table.tasks").innerText, Queue: document.querySelector("table.queue").innerText,
		NeedsYou: document.querySelector("#needs-you").innerText})`, &page)
	for part, wants := range map[string][]string{
		"channel":  {"@planner split the work: greet.sh for alice, farewell.sh for bob", "task-1 completed by alice", "task-2 completed by bob", "mq-1 landed on main"},
		"members":  {"planner", "alice", "bob", "mock"},
		"tasks":    {"add greet.sh", "add farewell.sh", "merge greet.sh and farewell.sh into main", "greet.sh is committed on my branch"},
		"queue":    {"mq-1", "aw/dev-team/main/alice"},
		"needsyou": {"Needs you", "planner waits for your approval", "bob", "Approve", "Deny"},
	} {
		got := map[string]string{"channel": page.Channel, "members": page.Members, "tasks": page.Tasks, "queue": page.Queue, "needsyou": page.NeedsYou}[part]
		for _, want := range wants {
			if !strings.Contains(got, want) {
				t.Errorf("the team page's %s lacks %q:\n%s", part, want, got)
			}
		}
	}

	// The picture: the whole page, kept as a test artefact (go test
	// -artifacts) and, with AGENT_WORKER_SCREENSHOT=path, there.
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "console.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if shot != "" {
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", shot, len(png))
	}
}
