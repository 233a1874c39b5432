package host

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// settableClock is a clock a test moves by hand.
type settableClock struct {
	mu sync.Mutex // guards off
	// off is added to the real time, so the store's timestamps still move.
	off time.Duration
}

func (c *settableClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}
func (c *settableClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// A live session that calls no hook for five minutes is stale: its agent
// shows idle instead of attached and status lists the problem; its next
// hook makes it attached again. The daemon's clock is moved, nothing
// sleeps.
func TestStaleSessionInStatus(t *testing.T) {
	t.Parallel()
	clk := &settableClock{}
	th := startHostWith(t, Config{Home: t.TempDir(), Listen: "127.0.0.1:0", PluginsDirs: []string{installed(t, "mock")}, Now: clk.Now})
	c, ctx := th.client(), t.Context()
	if _, err := c.CreateAgent(ctx, api.AgentSpec{Name: "me", Backend: "external"}); err != nil {
		t.Fatal(err)
	}
	me := api.Target{Agent: "me", Workflow: api.GlobalWorkflow, Tag: api.DefaultTag}
	if _, err := c.Hook(ctx, me, api.HookCall{Event: api.HookSessionStart, SessionID: "s1", Cwd: "/proj"}); err != nil {
		t.Fatal(err)
	}
	stale := func() (api.Agent, []string) {
		t.Helper()
		a, err := c.GetAgent(ctx, me)
		if err != nil {
			t.Fatal(err)
		}
		h, err := c.Health(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ps []string
		for _, p := range h.Problems {
			if strings.Contains(p, "has called no hook") {
				ps = append(ps, p)
			}
		}
		return a, ps
	}
	if a, ps := stale(); a.State != api.AgentAttached || a.Session.Stale || len(ps) != 0 {
		t.Fatalf("a fresh session: %s, %+v, problems %q", a.State, a.Session, ps)
	}
	clk.Add(6 * time.Minute)
	a, ps := stale()
	if a.State != api.AgentIdle || a.Session == nil || !a.Session.Stale {
		t.Errorf("after 6 silent minutes me is %s with session %+v; want idle, the session stale", a.State, a.Session)
	}
	if len(ps) != 1 || !strings.Contains(ps[0], "agent me: its Claude Code session s1 (in /proj)") {
		t.Errorf("status problems = %q, want the stale session", ps)
	}
	if _, err := c.Hook(ctx, me, api.HookCall{Event: api.HookUserPromptSubmit, SessionID: "s1", Cwd: "/proj"}); err != nil {
		t.Fatal(err)
	}
	if a, ps := stale(); a.State != api.AgentAttached || len(ps) != 0 {
		t.Errorf("after the session's next hook: %s, problems %q", a.State, ps)
	}
	s, err := c.StatusLine(ctx, me)
	if err != nil || s.Text() != "me" || s.Effort != "" {
		t.Errorf("status line without an effort = %+v (%q), %v", s, s.Text(), err)
	}
}
