package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// channelOf is scope's whole channel as peek --json prints it, oldest first.
func (c *cli) channelOf(scope string) []api.Message {
	c.t.Helper()
	var l api.MessageList
	if err := json.Unmarshal([]byte(c.ok("peek", scope, "-n", "1000", "--json")), &l); err != nil {
		c.t.Fatalf("peek %s --json: %v", scope, err)
	}
	return l.Messages
}

// taskTitles are the titles of scope's tasks, by state.
func (c *cli) taskTitles(scope string) map[string]string {
	c.t.Helper()
	var l api.TaskList
	if err := json.Unmarshal([]byte(c.ok("tasks", scope, "--json")), &l); err != nil {
		c.t.Fatalf("tasks %s --json: %v", scope, err)
	}
	out := map[string]string{}
	for _, tk := range l.Tasks {
		out[tk.Title] = string(tk.State)
	}
	return out
}

// A fork at seq N starts a new tag with exactly the source's messages up
// to N, the tasks as they were then and the documents, paused; resumed,
// its agents answer in the fork and the source hears nothing of it. A
// seq beyond the channel, a tag that exists and an unknown workflow are
// refused, writing nothing.
func TestE2EFork(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.startDaemon()
	file := filepath.Join(t.TempDir(), "team.yaml")
	writeFile(t, file, "name: team\nagents:\n  alice:\n    backend: mock\n    config: {script: [{result: \"alice in {{tag}} read: {{inbox_summary}}\"}]}\n")
	c.ok("start", file, "--background")
	replied := func(scope, text string) func() bool {
		return func() bool {
			for _, m := range c.channelOf(scope) {
				if m.From == "alice" && strings.Contains(m.Content, text) {
					return true
				}
			}
			return false
		}
	}
	c.ok("send", "@team", "@alice first")
	c.waitFor("alice's first answer", replied("@team:main", "read: user: alice first"))
	c.ok("tasks", "add", "@team", "early task")
	c.ok("doc", "write", "@team", "--file", "plan.md", "plan v1")
	before := c.channelOf("@team:main")
	at := before[len(before)-1].Seq

	c.ok("send", "@team", "@alice second")
	c.waitFor("alice's second answer", replied("@team:main", "read: user: alice second"))
	c.ok("tasks", "add", "@team", "late task")
	c.ok("doc", "write", "@team", "--file", "plan.md", "plan v2")
	c.ok("doc", "write", "@team", "--file", "late.md", "made after the fork's seq")
	source := c.channelOf("@team:main")

	var f api.Fork
	out := c.ok("fork", "@team", "--at", strconv.FormatInt(at, 10), "--tag", "try", "--json")
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("fork --json: %v in %q", err, out)
	}
	if f.Messages != len(before) || f.From != "@team" || f.At != at || f.Running || f.Workflow.State != api.WorkflowPaused {
		t.Errorf("fork = %+v; want %d messages from @team:main at %d, paused", f, len(before), at)
	}
	if len(f.DocumentsChanged) != 0 {
		t.Errorf("fork says documents changed after seq %d: %v; want none (each has its version of then)", at, f.DocumentsChanged)
	}

	forked := c.channelOf("@team:try")
	var got, want []string
	for _, m := range forked {
		got = append(got, m.From+": "+m.Content)
	}
	// The fork's tasks have ids of their own, and its channel names them.
	var ids []string
	for old, id := range f.Tasks {
		ids = append(ids, old, id)
	}
	for _, m := range before {
		want = append(want, m.From+": "+strings.NewReplacer(ids...).Replace(m.Content))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the fork's channel:\n%s\nwant the first %d messages of the source:\n%s", strings.Join(got, "\n"), len(before), strings.Join(want, "\n"))
	}
	if tasks := c.taskTitles("@team:try"); len(tasks) != 1 || tasks["early task"] != "pending" {
		t.Errorf("the fork's tasks: %v; want only the early task, pending", tasks)
	}
	if doc := c.ok("doc", "read", "@team:try", "--file", "plan.md"); !strings.Contains(doc, "plan v1") || strings.Contains(doc, "plan v2") {
		t.Errorf("the fork's plan.md = %q; want the version of seq %d, plan v1", doc, at)
	}
	if r := c.run("doc", "read", "@team:try", "--file", "late.md"); r.code == 0 {
		t.Errorf("the fork has late.md, made after its seq: %q", r.stdout)
	}

	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"a seq beyond the channel": {[]string{"@team", "--at", strconv.FormatInt(source[len(source)-1].Seq+100, 10), "--tag", "beyond"}, api.ExitCode(api.CodeInvalid), "is not a message of @team:main"},
		"a tag that exists":        {[]string{"@team", "--at", strconv.FormatInt(at, 10), "--tag", "try"}, api.ExitCode(api.CodeConflict), "@team:try exists already"},
		"an unknown workflow":      {[]string{"@nope", "--at", "1", "--tag", "x"}, api.ExitCode(api.CodeNotFound), "no workflow @nope"},
		"no --at":                  {[]string{"@team", "--tag", "x"}, 2, "--at is required"},
	} {
		r := c.run(append([]string{"fork"}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: fork exit %d, stderr %q; want exit %d saying %q", name, r.code, r.stderr, tc.code, tc.want)
		}
	}
	if out := c.ok("workflows"); strings.Contains(out, "@team:beyond") || strings.Contains(out, "@nope") {
		t.Errorf("a refused fork left a workflow behind:\n%s", out)
	}

	// Resumed, the fork's alice answers a new mention in the fork; the
	// source's channel does not move.
	c.ok("resume", "@team:try")
	c.ok("send", "@team:try", "@alice third")
	c.waitFor("alice's answer in the fork", replied("@team:try", "alice in try read: user: alice third"))
	if after := c.channelOf("@team:main"); len(after) != len(source) {
		t.Errorf("the source's channel went from %d to %d messages while the fork ran", len(source), len(after))
	}

	// --run starts the fork's agents at once.
	if out := c.ok("fork", "@team", "--at", strconv.FormatInt(at, 10), "--tag", "now", "--run"); !strings.Contains(out, "its agents run") {
		t.Errorf("fork --run printed %q", out)
	}
}
