package workflow

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// notify: reaches the File and the resolved Instance as written, with the
// line of each subscription.
func TestNotify(t *testing.T) {
	t.Parallel()
	f, err := Parse("wf.yaml", []byte(`name: team
agents:
  a: {backend: mock}
notify:
  - webhook: https://hooks.example.com/agents?x=1
    events: [question, run_failed]
    secret_env: NOTIFY_SECRET
  - {webhook: "http://127.0.0.1:9/slack", events: [idle]}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Notify{
		{Webhook: "https://hooks.example.com/agents?x=1", Events: []NotifyEvent{NotifyQuestion, NotifyRunFailed}, SecretEnv: "NOTIFY_SECRET", Line: 5},
		{Webhook: "http://127.0.0.1:9/slack", Events: []NotifyEvent{NotifyIdle}, Line: 8},
	}
	if diff := cmp.Diff(want, f.Notify); diff != "" {
		t.Errorf("notify (-want +got):\n%s", diff)
	}
	inst, err := Resolve(f, Vars{Tag: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, inst.Notify); diff != "" {
		t.Errorf("resolved notify (-want +got):\n%s", diff)
	}
	if !want[1].Wants(NotifyIdle) || want[1].Wants(NotifyQuestion) || !want[1].Wants(NotifyTest) {
		t.Errorf("Wants does not follow the events")
	}
}

func TestNotifyProblems(t *testing.T) {
	t.Parallel()
	const agent = "agents:\n  a: {backend: mock}\n"
	tests := map[string]struct{ src, want string }{
		"not http":      {agent + "notify: [{webhook: ftp://x.example/a, events: [idle]}]\n", `wf.yaml:3:20: notify 1: webhook must be an http:// or https:// URL, not "ftp:"`},
		"no host":       {agent + "notify: [{webhook: \"https:///path\", events: [idle]}]\n", "wf.yaml:3:20: notify 1: webhook URL has no host"},
		"relative":      {agent + "notify: [{webhook: /hooks, events: [idle]}]\n", "wf.yaml:3:20: notify 1: webhook must be an http:// or https:// URL"},
		"not a url":     {agent + "notify: [{webhook: \"http://a b/%zz\", events: [idle]}]\n", "wf.yaml:3:20: notify 1: webhook is not a URL"},
		"no webhook":    {agent + "notify: [{events: [idle]}]\n", "wf.yaml:3:10: notify 1 needs webhook"},
		"unknown event": {agent + "notify: [{webhook: https://x.example, events: [questoin]}]\n", `wf.yaml:3:48: notify 1: unknown event "questoin": did you mean question?`},
		"twice":         {agent + "notify: [{webhook: https://x.example, events: [idle, idle]}]\n", "wf.yaml:3:54: notify 1: event idle is listed twice"},
		"no events":     {agent + "notify: [{webhook: https://x.example}]\n", "wf.yaml:3:10: notify 1 needs events"},
		"empty events":  {agent + "notify: [{webhook: https://x.example, events: []}]\n", "wf.yaml:3:47: notify 1 lists no events"},
		"test event":    {agent + "notify: [{webhook: https://x.example, events: [test]}]\n", `unknown event "test"`},
		"unknown key":   {agent + "notify: [{webhook: https://x.example, events: [idle], secret: X}]\n", `wf.yaml:3:55: unknown key "secret" in notify 1: known keys are webhook, events, secret_env`},
		"bad env name":  {agent + "notify: [{webhook: https://x.example, events: [idle], secret_env: 9X}]\n", `wf.yaml:3:67: notify 1: secret_env "9X" is not an environment variable name`},
		"not a list":    {agent + "notify: {webhook: https://x.example}\n", "wf.yaml:3:9: notify must be a list"},
		"entry scalar":  {agent + "notify: [https://x.example]\n", "wf.yaml:3:10: each notify entry must be a map"},
		"fragment":      {agent + "notify: [{webhook: \"https://x.example/#a\", events: [idle]}]\n", "has a #fragment"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("wf.yaml", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error =\n%v\nwant one containing\n%s", err, tc.want)
			}
		})
	}
}

// A URL may hold a token (a chat's incoming webhook): no message repeats
// it.
func TestNotifyURLNotInMessages(t *testing.T) {
	t.Parallel()
	_, err := Parse("wf.yaml", []byte("agents:\n  a: {backend: mock}\nnotify: [{webhook: \"gopher://tok3n@x/s3cret\", events: [idle]}]\n"))
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "tok3n") {
		t.Errorf("error = %v; want one that does not quote the URL", err)
	}
}

func TestParseNotifyConfig(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		src  string
		line int
	}{
		"a list":        {"- {webhook: https://x.example/h, events: [member_down], secret_env: S}\n", 1},
		"under notify:": {"notify:\n- {webhook: https://x.example/h, events: [member_down], secret_env: S}\n", 2},
	} {
		got, err := ParseNotifyConfig("n.yaml", []byte(tc.src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := []Notify{{Webhook: "https://x.example/h", Events: []NotifyEvent{NotifyMemberDown}, SecretEnv: "S", Line: tc.line}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	bad := map[string]struct{ src, want string }{
		"bad url":     {"- {webhook: nope, events: [idle]}\n", "n.yaml:1:13: notify 1: webhook must be an http:// or https:// URL"},
		"unknown key": {"notifications: []\n", `n.yaml:1:1: unknown key "notifications" in the notify config`},
		"empty":       {"", "n.yaml:1:1: the notify config is empty"},
		"yaml":        {"- {webhook: [\n", "n.yaml:"},
	}
	for name, tc := range bad {
		_, err := ParseNotifyConfig("n.yaml", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error =\n%v\nwant one containing\n%s", name, err, tc.want)
		}
	}
}

// FuzzNotifyConfig: whatever the --notify-config file (or a notify: list)
// holds, the parser does not panic, and what it accepts is what the
// daemon may send to: http(s) URLs with a host, known events, each once,
// variable names for secrets.
func FuzzNotifyConfig(f *testing.F) {
	for _, s := range []string{
		"- {webhook: https://x.example/h, events: [member_down], secret_env: S}\n",
		"notify:\n- webhook: \"http://127.0.0.1:9/a?b=c\"\n  events: [question, approval, run_failed, over_budget, loop_guard, idle]\n",
		"- {webhook: ftp://x, events: [idle, idle]}\n", "notify: {}\n", "- [a]\n", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		subs, err := ParseNotifyConfig("n.yaml", []byte(src))
		if err != nil {
			return
		}
		for _, s := range subs {
			if CheckWebhookURL(s.Webhook) != nil || len(s.Events) == 0 || s.SecretEnv != "" && !identRE.MatchString(s.SecretEnv) {
				t.Fatalf("accepted %+v from %q", s, src)
			}
			seen := map[NotifyEvent]bool{}
			for _, e := range s.Events {
				if seen[e] || !s.Wants(e) || e == NotifyTest {
					t.Fatalf("accepted events %v from %q", s.Events, src)
				}
				seen[e] = true
			}
		}
	})
}
