package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/runner"
	"github.com/agent-worker/agent-worker/host/team"
)

// waitArmed blocks until some waiter is due exactly at at: the scheduler
// has computed that fire and waits for it. It fails the test after a
// deadline, so a schedule that never arms is a failure, not a hang.
func (c *fakeClock) waitArmed(t testing.TB, at time.Time, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	wake := time.AfterFunc(30*time.Second, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.cond.Broadcast()
	})
	defer wake.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		var due []time.Time
		for _, w := range c.waiters {
			if w.at.Equal(at) {
				return
			}
			if w.at.Before(at.Add(7 * 24 * time.Hour)) {
				due = append(due, w.at)
			}
		}
		if time.Now().After(deadline) {
			slices.SortFunc(due, time.Time.Compare)
			t.Fatalf("%s never armed a wake-up for %s; within a week of it the clock waits for %v", what, at.Format(time.RFC1123), slices.Compact(due))
		}
		c.cond.Wait()
	}
}

// Every schedule form a workflow may load fires on the fake clock at the
// time it names, day-of-week 7 on Sunday like 0; refused forms stop the
// workflow, `new` and `schedule set` with a clear error.
func TestEveryScheduleFormLoadsAndFires(t *testing.T) {
	t.Parallel()
	fri := time.Date(2026, 11, 20, 8, 0, 0, 0, time.Local) // a Friday
	clock := newFakeClock(fri)
	th, _ := pluginHost(t, runner.SupervisorConfig{}, func(c *Config) {
		// The poll would wake agents between fires; push it past the test.
		c.Now, c.Scheduler.Clock, c.Scheduler.PollInterval = clock.Now, clock, 1000*time.Hour
	})
	ev := watchEvents(t, th)
	c := th.client()
	ctx := context.Background()
	dir := t.TempDir()
	at := func(day, hour, minute, sec int) time.Time {
		return time.Date(2026, 11, day, hour, minute, sec, 0, time.Local)
	}

	// Each form in its own workflow tag, started where the last one fired.
	forms := []struct {
		tag, schedule string
		fires         time.Time
	}{
		{"seconds", "30s", at(20, 8, 0, 30)},
		{"minutes", "5m", at(20, 8, 5, 30)},
		{"every", "@every 2m", at(20, 8, 7, 30)},
		{"cron", "*/15 9-17 * * MON-FRI", at(20, 9, 0, 0)},
		{"hourly", "@hourly", at(20, 10, 0, 0)},
		{"daily", "@daily", at(21, 0, 0, 0)},          // Saturday midnight
		{"sunday-as-7", "0 9 * * 7", at(22, 9, 0, 0)}, // Sunday, not Saturday 09:00
		{"sunday-as-0", "0 9 * * 0", at(29, 9, 0, 0)}, // the next Sunday
		{"weekend", "30 9 * * 6-7", at(29, 9, 30, 0)}, // Sunday is in 6-7
	}
	for _, f := range forms {
		file := filepath.Join(dir, f.tag+".yaml")
		if err := os.WriteFile(file, []byte(fmt.Sprintf("name: forms\nagents:\n  bot:\n    backend: mock\n    schedule: %q\n    wakeup_prompt: fire %s\n", f.schedule, f.tag)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file, Tag: f.tag}); err != nil {
			t.Fatalf("schedule %q does not load: %v", f.schedule, err)
		}
		what := fmt.Sprintf("schedule %q (started %s)", f.schedule, clock.Now().Format(time.RFC1123))
		clock.waitArmed(t, f.fires, what)
		clock.Advance(f.fires.Sub(clock.Now()))
		wake := ev.next(what+" to post its wake-up", func(e team.Event) bool {
			return e.Kind == team.EventMessage && e.Message.Tag == f.tag && e.Message.Sender == "system"
		})
		if want := "@bot fire " + f.tag; wake.Message.Content != want || !wake.Message.CreatedAt.Equal(f.fires) {
			t.Errorf("%s: wake-up %q at %s, want %q at %s", what, wake.Message.Content, wake.Message.CreatedAt.Format(time.RFC1123), want, f.fires.Format(time.RFC1123))
		}
		ev.next(what+" to run", func(e team.Event) bool {
			return e.Kind == team.EventRunFinished && e.Agent.Tag == f.tag && e.Agent.Name == "bot"
		})
		if err := c.StopWorkflow(ctx, api.Target{Workflow: "forms", Tag: f.tag}, true); err != nil {
			t.Fatal(err)
		}
	}

	// Refused forms: the workflow names file:line, `new` and `schedule set`
	// are refused as invalid (the CLI's usage exit code).
	if _, err := c.CreateAgent(ctx, api.AgentSpec{Name: "plain", Backend: "mock"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ schedule, want string }{
		{"0 9 * * * *", "has 6 fields, a cron expression has 5"},
		{"every tuesday", "has 2 fields, a cron expression has 5"},
		{"500ms", "is shorter than 1s: use at least 1s"},
		{"0 9 * * 8", `day-of-week field "8" is out of range`},
	} {
		file := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(file, []byte(fmt.Sprintf("name: bad\nagents:\n  bot:\n    backend: mock\n    schedule: %q\n", bad.schedule)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := c.StartWorkflow(ctx, api.StartWorkflow{Path: file})
		if want := file + ":5:15: schedule " + fmt.Sprintf("%q", bad.schedule); api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(fmt.Sprint(err), want) || !strings.Contains(fmt.Sprint(err), bad.want) {
			t.Errorf("workflow with schedule %q: %v, want %s: ...%s", bad.schedule, err, want, bad.want)
		}
		_, err = c.CreateAgent(ctx, api.AgentSpec{Name: "bad", Backend: "mock", Schedule: bad.schedule})
		if api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(fmt.Sprint(err), bad.want) {
			t.Errorf("new --schedule %q: %v, want invalid: ...%s", bad.schedule, err, bad.want)
		}
		err = c.SetSchedule(ctx, api.Target{Agent: "plain", Workflow: "global", Tag: "main"}, api.ScheduleRequest{Schedule: bad.schedule})
		if api.ErrorCode(err) != api.CodeInvalid || !strings.Contains(fmt.Sprint(err), bad.want) {
			t.Errorf("schedule set %q: %v, want invalid: ...%s", bad.schedule, err, bad.want)
		}
	}
}
