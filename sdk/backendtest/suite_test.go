package backendtest_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// minimal is the least a backend must do: act on the inbox through the
// daemon, report a result, stop on cancel and on a failed Send.
func minimal(ctx context.Context, req backend.Request, ev backend.Events) error {
	c, err := worker.Connect(ctx, req.Daemon)
	if err != nil {
		return err
	}
	defer c.Close()
	wc, err := worker.Fetch(ctx, c, req)
	if err != nil {
		return err
	}
	if string(req.Agent.Config) == `"hang"` {
		<-ctx.Done()
		return ctx.Err()
	}
	if len(wc.Inbox) > 0 {
		if _, err := c.Send(ctx, "seen", ""); err != nil {
			return err
		}
	}
	return ev.Send(backend.Event{Kind: backend.EventResult, Text: "done"})
}

func hanging(r backend.Request) backend.Request {
	r.Agent.Config = []byte(`"hang"`)
	return r
}

func TestSuitePassesAMinimalBackend(t *testing.T) {
	backendtest.Run(t, func(*testing.T) backend.Backend { return backend.Func(minimal) },
		backendtest.WithHangingRequest(hanging))
}

func TestSuiteSkipsCancellationWithoutAHangingRequest(t *testing.T) {
	out, err := runBroken(t, "minimal-without-hang")
	if err != nil || !strings.Contains(out, "--- SKIP: TestBrokenBackend/CancelStopsRun") || !strings.Contains(out, "no WithHangingRequest") {
		t.Errorf("err %v, output:\n%s", err, out)
	}
}

// broken are backends that each break one promise, with what the suite
// must say about it.
var broken = map[string]struct {
	b    backend.Func
	want string
}{
	"silent": {
		func(context.Context, backend.Request, backend.Events) error { return nil },
		"neither an EventResult nor a channel_send call",
	},
	"nil-on-cancel": {
		func(ctx context.Context, req backend.Request, ev backend.Events) error {
			if err := minimal(ctx, req, ev); !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
		"a cancelled Run returned nil",
	},
	"keeps-sending": {
		func(ctx context.Context, req backend.Request, ev backend.Events) error {
			for range 20 {
				_ = ev.Send(backend.Event{Kind: backend.EventText, Text: "la"})
			}
			return minimal(ctx, req, backend.EventsFunc(func(backend.Event) error { return nil }))
		},
		"more times after it failed",
	},
	"unreachable-is-fine": {
		func(ctx context.Context, req backend.Request, ev backend.Events) error {
			if err := minimal(ctx, req, ev); err != nil && !strings.Contains(err.Error(), "connect to daemon") {
				return err
			}
			return nil
		},
		"unreachable daemon returned nil",
	},
	"panics": {
		func(context.Context, backend.Request, backend.Events) error { panic("boom") },
		"Run panicked: boom",
	},
	"bad-events": {
		func(ctx context.Context, req backend.Request, ev backend.Events) error {
			_ = ev.Send(backend.Event{Kind: "thought"})
			_ = ev.Send(backend.Event{Kind: backend.EventToolCall})
			return minimal(ctx, req, ev)
		},
		"has an unknown kind",
	},
}

// TestBrokenBackend runs the suite over one broken backend when the
// outer test asks for it; on its own it does nothing.
func TestBrokenBackend(t *testing.T) {
	name := os.Getenv("BACKENDTEST_BROKEN")
	if name == "" {
		t.Skip("run by TestSuiteCatches")
	}
	if name == "minimal-without-hang" {
		backendtest.Run(t, func(*testing.T) backend.Backend { return backend.Func(minimal) })
		return
	}
	backendtest.Run(t, func(*testing.T) backend.Backend { return broken[name].b }, backendtest.WithHangingRequest(hanging))
}

func runBroken(t *testing.T, name string) (string, error) {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenBackend$", "-test.v")
	cmd.Env = append(os.Environ(), "BACKENDTEST_BROKEN="+name)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The suite must fail each broken backend, for the right reason.
func TestSuiteCatches(t *testing.T) {
	for name, tc := range broken {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, err := runBroken(t, name)
			if err == nil {
				t.Fatalf("the suite passed a backend that is %s:\n%s", name, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("the suite failed %s without saying %q:\n%s", name, tc.want, out)
			}
		})
	}
}

func TestDaemonNeedsTheToken(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	for name, hdr := range map[string]string{"none": "", "unknown": "Bearer nope", "not bearer": "Basic x"} {
		req, _ := http.NewRequest("POST", d.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		if hdr != "" {
			req.Header.Set("Authorization", hdr)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s token: status %d, want 401", name, resp.StatusCode)
		}
	}
}

func TestDaemonMentionsAndInbox(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	req := d.Request("alice")
	d.Request("bob")
	// In order: the inbox check below depends on it.
	for _, tc := range []struct {
		from, content string
		want          []string
	}{
		{"user", "@alice hi", []string{"alice"}},
		{"user", "mail bob@example.com", []string{}},
		{"user", "@alice-, look", []string{"alice"}},
		{"user", "@bob @alice @bob", []string{"bob", "alice"}},
		{"bob", "@all standup", []string{"alice"}},
		{"alice", "note to @alice", []string{}},
	} {
		if got := d.Post(tc.from, tc.content).Mentions; !cmp.Equal(got, tc.want) {
			t.Errorf("mentions of %q = %v, want %v", tc.content, got, tc.want)
		}
	}
	c, err := worker.Connect(t.Context(), req.Daemon)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inbox, err := c.Inbox(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range inbox {
		got = append(got, m.Content)
	}
	want := []string{"@alice hi", "@alice-, look", "@bob @alice @bob", "@all standup"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("alice's inbox (-want +got):\n%s", diff)
	}
	if calls := d.Calls(); !cmp.Equal(calls, []string{"my_inbox"}) {
		t.Errorf("Calls = %v", calls)
	}
}

// The fake serves exactly the daemon's tools (SPEC.md "MCP tools").
func TestDaemonServesTheDaemonsTools(t *testing.T) {
	t.Parallel()
	d := backendtest.NewDaemon(t)
	req := d.Request("alice")
	// A transport of its own: httptest.Server.Close of a parallel test
	// closes http.DefaultTransport's idle connections, this one's too.
	own := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(own.CloseIdleConnections)
	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", req.Daemon.Headers["Authorization"])
		return own.RoundTrip(r)
	})}
	s, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).
		Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: d.URL(), HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tool := range res.Tools {
		got = append(got, tool.Name)
	}
	want := []string{"agent_spawn", "agent_stop", "channel_read", "channel_send", "my_inbox", "my_inbox_ack", "my_status_set", "resource_create", "resource_read",
		"team_doc_append", "team_doc_create", "team_doc_list", "team_doc_read", "team_doc_write", "team_members",
		"team_proposal_cancel", "team_proposal_create", "team_proposal_status", "team_vote",
		"worktree_discard", "worktree_integrate", "worktree_status", "worktree_queue",
		"task_create", "task_list", "task_claim", "task_progress", "task_complete", "task_fail", "task_release", "task_cancel", "my_tasks", "ask_user", "approval_wait", "team_search",
		"effort_start", "effort_continue", "effort_status", "effort_log", "effort_finish"}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
