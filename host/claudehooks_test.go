package host

import (
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
)

// The daemon's side of Claude Code hooks: only an external agent can be
// attached; SessionStart attaches and hands over the unread messages
// with the agent's identity; a Stop holds Claude while messages wait, but
// never when a Stop hook already held it; SessionEnd of another session
// detaches nothing, the session's own does.
func TestClaudeHooks(t *testing.T) {
	t.Parallel()
	th := startHost(t, t.TempDir())
	c, ctx := th.client(), t.Context()
	for _, spec := range []api.AgentSpec{{Name: "me", Backend: "external", System: "You review."}, {Name: "bob", Backend: "mock"}} {
		if _, err := c.CreateAgent(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	me := api.Target{Agent: "me", Workflow: api.GlobalWorkflow, Tag: api.DefaultTag}
	send := func(text string) {
		t.Helper()
		if _, err := c.Send(ctx, api.SendRequest{Target: "@global", Message: text}); err != nil {
			t.Fatal(err)
		}
	}
	hook := func(call api.HookCall) api.HookDelivery {
		t.Helper()
		if call.SessionID == "" {
			call.SessionID = "s1"
		}
		d, err := c.Hook(ctx, me, call)
		if err != nil {
			t.Fatalf("%s: %v", call.Event, err)
		}
		return d
	}
	state := func() api.Agent {
		t.Helper()
		a, err := c.GetAgent(ctx, me)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	if _, err := c.Hook(ctx, api.Target{Agent: "bob", Workflow: "global", Tag: "main"}, api.HookCall{Event: api.HookSessionStart, SessionID: "s1"}); api.ErrorCode(err) != api.CodeConflict {
		t.Errorf("a session attached to bob, whom the daemon runs: %v; want a conflict", err)
	}
	if _, err := c.Hook(ctx, me, api.HookCall{Event: "Notification", SessionID: "s1"}); api.ErrorCode(err) != api.CodeInvalid {
		t.Errorf("an unknown event: %v; want invalid", err)
	}

	send("@me first")
	d := hook(api.HookCall{Event: api.HookSessionStart, Cwd: "/proj"})
	if d.Agent != "me" || d.System != "You review." || len(d.Members) != 2 || len(d.Messages) != 1 || d.Messages[0].Content != "@me first" || d.Block {
		t.Errorf("SessionStart = %+v", d)
	}
	if a := state(); a.State != api.AgentAttached || a.Session == nil || a.Session.ID != "s1" || a.Session.Cwd != "/proj" || a.InboxDepth != 0 {
		t.Errorf("after SessionStart: %s, %+v, %d unread", a.State, a.Session, a.InboxDepth)
	}
	if d := hook(api.HookCall{Event: api.HookUserPromptSubmit}); len(d.Messages) != 0 {
		t.Errorf("UserPromptSubmit handed over %v again", d.Messages)
	}

	send("@me second")
	if d := hook(api.HookCall{Event: api.HookStop, StopHookActive: true}); d.Block || len(d.Messages) != 0 {
		t.Errorf("a Stop after a held Stop = %+v; want no hold and nothing handed over", d)
	}
	if d := hook(api.HookCall{Event: api.HookStop}); !d.Block || len(d.Messages) != 1 || d.Messages[0].Content != "@me second" {
		t.Errorf("Stop while a mention waits = %+v; want it held with the mention", d)
	}
	if d := hook(api.HookCall{Event: api.HookStop}); d.Block {
		t.Errorf("Stop again for the same mention = %+v; want no hold", d)
	}

	hook(api.HookCall{Event: api.HookSessionEnd, SessionID: "other"})
	if a := state(); a.State != api.AgentAttached {
		t.Errorf("another session's end detached me: %s", a.State)
	}
	hook(api.HookCall{Event: api.HookSessionEnd})
	if a := state(); a.State != api.AgentIdle || a.Session != nil {
		t.Errorf("after SessionEnd: %s, %+v", a.State, a.Session)
	}
}
