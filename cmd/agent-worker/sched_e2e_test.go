package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

func (c *cli) agent(name string) api.Agent {
	c.t.Helper()
	var a api.Agent
	if err := json.Unmarshal([]byte(c.ok("info", name, "--json")), &a); err != nil {
		c.t.Fatal(err)
	}
	return a
}

// The seed's step-4 check through the built binaries, with the inbox poll
// pushed out of reach so only wakes can start runs.
func TestE2EMentionWakesAndTeamTalks(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := exec.Command(binary, "daemon", "--poll-interval", "1h")
	daemon.Env = c.env()
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	go daemon.Wait()
	c.waitFor("the daemon", func() bool { _, err := api.ReadDaemonInfo(c.home); return err == nil })
	c.ok("new", "alice", "--backend", "mock", "--config",
		`{"script":[{"reply":"@bob please review","when":{"from":"user"}},{"reply":"thanks bob","when":{"from":"bob"}}]}`)
	c.ok("new", "bob", "--backend", "mock", "--config", `{"script":[{"reply":"@alice LGTM","when":{"from":"alice"}}]}`)

	follow := exec.Command(binary, "peek", "--follow", "-n", "1")
	follow.Env = c.env()
	out, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	c.ok("send", "@global", "@alice ask @bob for a review")
	var seen strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(seen.String(), "thanks bob") {
		n, err := out.Read(buf)
		if err != nil {
			t.Fatalf("peek --follow ended early: %v\n%s", err, seen.String())
		}
		seen.Write(buf[:n])
	}
	follow.Process.Signal(syscall.SIGINT)
	follow.Wait()
	for _, want := range []string{"[user] @alice ask @bob", "~ alice is working", "[alice] @bob please review", "[bob] @alice LGTM", "[alice] thanks bob"} {
		if !strings.Contains(seen.String(), want) {
			t.Errorf("peek --follow lacks %q:\n%s", want, seen.String())
		}
	}
	c.waitFor("both inboxes empty", func() bool { return c.agent("alice").InboxDepth == 0 && c.agent("bob").InboxDepth == 0 })
	if a := c.agent("alice"); len(a.Runs) != 2 || a.Runs[0].State != "succeeded" {
		t.Errorf("alice's runs = %+v", a.Runs)
	}
	if out := c.ok("info", "alice"); !strings.Contains(out, "last runs:") || !strings.Contains(out, "succeeded") {
		t.Errorf("info alice:\n%s", out)
	}
}

// kill -9 while a run is in flight: after the restart the agent runs again
// and its message is handled exactly once.
func TestE2EKilledRunIsRedone(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := c.startDaemon()
	// Each run holds until the gate file is in alice's workspace (the
	// step's working directory), so the kill lands mid-run however slow
	// the machine is.
	gate := filepath.Join(c.home, "workspaces", "global", "main", "alice", "gate")
	c.ok("new", "alice", "--backend", "mock", "--config", `{"script":[{"shell":"while [ ! -e gate ]; do sleep 0.05; done"},{"reply":"handled"}]}`)
	c.ok("send", "alice", "do it once")
	c.waitFor("the run to start", func() bool {
		runs, err := c.client().ListRuns(context.Background(), "alice")
		return err == nil && len(runs) == 1 && runs[0].State == "running"
	})
	if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait() // killed: its exit status says so
	writeFile(t, gate, "")
	c.ok("list") // a new daemon re-queues alice
	c.waitFor("alice to finish", func() bool { return c.agent("alice").InboxDepth == 0 })
	c.waitFor("the handled line", func() bool { return strings.Contains(c.ok("peek"), "[alice] handled") })
	if n := strings.Count(c.ok("peek", "-n", "50"), "handled"); n != 1 {
		t.Errorf("the message was handled %d times", n)
	}
	runs := c.agent("alice").Runs
	if len(runs) != 2 || runs[1].State != "failed" || !strings.Contains(runs[1].Error, "daemon stopped") || runs[0].State != "succeeded" {
		t.Errorf("runs = %+v", runs)
	}
}

// kill -9 between a run's end and its settle. The ack, the reply and the
// run's end are one transaction, so the killed daemon leaves the run
// unsettled (inbox unread, nothing posted) and the next daemon redoes it:
// the reply is posted once, its mention reaches bob once, the inbox is
// acked.
func TestE2EKilledBetweenRunEndAndSettle(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	marker := filepath.Join(t.TempDir(), "settling")
	daemon := c.startDaemon("AGENT_WORKER_TEST_PAUSE_BEFORE_SETTLE=" + marker)
	c.ok("new", "bob", "--backend", "external") // never run: its inbox counts the replies
	c.ok("new", "alice", "--backend", "mock", "--config", `{"script":[{"result":"@bob handled it"}]}`)
	c.ok("send", "alice", "do it once")
	var paused string
	c.waitFor("the run to end and pause before its settle", func() bool {
		b, err := os.ReadFile(marker)
		paused = string(b)
		return err == nil
	})
	// The run is over (its plugin has exited) and not settled.
	if a := c.agent("alice"); a.InboxDepth != 1 || len(a.Runs) != 1 || a.Runs[0].ID != paused || a.Runs[0].State != "running" {
		t.Fatalf("before settle: inbox %d, runs %+v; want the message unread and run %s still running", a.InboxDepth, a.Runs, paused)
	}
	if out := c.ok("peek"); strings.Contains(out, "handled it") {
		t.Fatalf("the reply was posted before the settle:\n%s", out)
	}
	if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()

	c.ok("list") // a new daemon, without the hook, redoes the run
	c.waitFor("alice to settle", func() bool { return c.agent("alice").InboxDepth == 0 })
	if n := strings.Count(c.ok("peek", "-n", "50"), "handled it"); n != 1 {
		t.Errorf("the reply was posted %d times, want once", n)
	}
	if d := c.agent("bob").InboxDepth; d != 1 {
		t.Errorf("bob's inbox holds %d messages, want the one reply", d)
	}
	runs := c.agent("alice").Runs
	if len(runs) != 2 || runs[1].ID != paused || runs[1].State != "failed" || !strings.Contains(runs[1].Error, "daemon stopped") ||
		runs[0].State != "succeeded" {
		t.Errorf("runs = %+v; want the killed run failed and one redone run succeeded", runs)
	}
	var st api.Health
	if err := json.Unmarshal([]byte(c.ok("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Workers) != 0 {
		t.Errorf("workers left after the runs ended: %+v", st.Workers)
	}
}

func TestE2EScheduleAndResume(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("new", "bot", "--backend", "mock")
	if out := c.ok("schedule", "bot", "set", "*/5 * * * *", "--prompt", "check the queue"); !strings.Contains(out, "wakes on */5 * * * *") {
		t.Errorf("schedule set printed %q", out)
	}
	if a := c.agent("bot"); a.Schedule != "*/5 * * * *" || a.WakeupPrompt != "check the queue" {
		t.Errorf("after schedule set: %+v", a)
	}
	if r := c.run("schedule", "bot", "set", "every tuesday"); r.code != api.ExitUsage {
		t.Errorf("bad schedule: exit %d %q", r.code, r.stderr)
	}
	c.ok("schedule", "bot", "clear")
	if a := c.agent("bot"); a.Schedule != "" {
		t.Errorf("after clear: %+v", a)
	}
	c.ok("new", "sad", "--backend", "mock", "--config", `{"script":[{"fail":"no","permanent":true}]}`)
	c.ok("send", "sad", "hi")
	c.waitFor("sad to fail", func() bool { return c.agent("sad").State == "failed" })
	if out := c.ok("status"); !strings.Contains(out, "agent sad failed") {
		t.Errorf("status:\n%s", out)
	}
	c.ok("resume", "sad")
	if r := c.run("resume", "bot"); r.code != api.ExitConflict {
		t.Errorf("resume of a healthy agent: exit %d", r.code)
	}
	c.waitFor("sad to run again", func() bool { return len(c.agent("sad").Runs) >= 2 })
}

// Every schedule form the daemon fires is accepted by `new` and `schedule
// set`, stored as written; refused forms are usage errors that say what to
// write, from `new`, `schedule set` and a workflow file (with file:line).
func TestE2EScheduleForms(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("new", "bot", "--backend", "mock", "--schedule", "0 9 * * 7")
	for _, s := range []string{"30s", "5m", "@every 2h", "*/15 9-17 * * MON-FRI", "@daily", "@hourly", "0 9 * * 0", "0 9 * * 7"} {
		if out := c.ok("schedule", "bot", "set", s); !strings.Contains(out, "wakes on "+s) {
			t.Errorf("schedule set %q printed %q", s, out)
		}
		if a := c.agent("bot"); a.Schedule != s {
			t.Errorf("after schedule set %q the agent's schedule is %q", s, a.Schedule)
		}
	}
	dir := t.TempDir()
	for _, bad := range []struct{ schedule, want string }{
		{"0 9 * * * *", `schedule "0 9 * * * *" has 6 fields, a cron expression has 5: use an interval`},
		{"every tuesday", `schedule "every tuesday" has 2 fields`},
		{"500ms", `schedule "500ms" is shorter than 1s: use at least 1s`},
		{"0 9 * * 8", `schedule "0 9 * * 8": day-of-week field "8" is out of range: use *, numbers 0-7 (0 and 7 are Sunday)`},
	} {
		if r := c.run("schedule", "bot", "set", bad.schedule); r.code != api.ExitUsage || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("schedule set %q: exit %d %q, want %d and %q", bad.schedule, r.code, r.stderr, api.ExitUsage, bad.want)
		}
		if r := c.run("new", "other", "--backend", "mock", "--schedule", bad.schedule); r.code != api.ExitUsage || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("new --schedule %q: exit %d %q, want %d and %q", bad.schedule, r.code, r.stderr, api.ExitUsage, bad.want)
		}
		file := filepath.Join(dir, "team.yaml")
		if err := os.WriteFile(file, []byte("name: team\nagents:\n  bot:\n    backend: mock\n    schedule: \""+bad.schedule+"\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := c.run("start", file, "--background"); r.code != api.ExitUsage || !strings.Contains(r.stderr, file+":5:15: "+bad.want) {
			t.Errorf("start with schedule %q: exit %d %q, want %d and %q", bad.schedule, r.code, r.stderr, api.ExitUsage, file+":5:15: "+bad.want)
		}
	}
	if a := c.agent("bot"); a.Schedule != "0 9 * * 7" {
		t.Errorf("refused schedules changed bot's schedule to %q", a.Schedule)
	}
}
