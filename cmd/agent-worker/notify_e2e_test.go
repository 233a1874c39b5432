package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
)

// hookReceiver is a notify: webhook receiver in the test's process: it
// answers each POST with the status set last and records what it got.
type hookReceiver struct {
	srv *httptest.Server
	// mu guards the fields that follow.
	mu     sync.Mutex
	status int
	got    []hookRequest
}

// hookRequest is one POST as the receiver saw it, and what it answered.
type hookRequest struct {
	path     string
	delivery string
	event    string
	sig      string
	body     []byte
	answered int
}

func newHookReceiver(t *testing.T, status int) *hookReceiver {
	r := &hookReceiver{status: status}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			t.Errorf("receiver: %v", err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, hookRequest{path: req.URL.Path, delivery: req.Header.Get(api.HeaderNotifyDelivery), event: req.Header.Get(api.HeaderNotifyEvent),
			sig: req.Header.Get(api.HeaderNotifySignature), body: b, answered: r.status})
		w.WriteHeader(r.status)
		_, _ = io.WriteString(w, "receiver says "+http.StatusText(r.status))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) setStatus(s int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = s
}

// requests returns what it got so far that matches keep.
func (r *hookReceiver) requests(keep func(hookRequest) bool) []hookRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hookRequest
	for _, h := range r.got {
		if keep(h) {
			out = append(out, h)
		}
	}
	return out
}

func byDelivery(id string) func(hookRequest) bool {
	return func(h hookRequest) bool { return h.delivery == id }
}

func taken(id string) func(hookRequest) bool {
	return func(h hookRequest) bool { return h.delivery == id && h.answered/100 == 2 }
}

func (c *cli) notifications(args ...string) map[string]api.Notification {
	c.t.Helper()
	var l api.NotificationList
	if err := json.Unmarshal([]byte(c.ok(append([]string{"notifications", "--json"}, args...)...)), &l); err != nil {
		c.t.Fatalf("notifications --json: %v", err)
	}
	out := map[string]api.Notification{}
	for _, n := range l.Notifications {
		out[n.ID] = n
	}
	return out
}

// notifyTest runs `notify test` and returns the one delivery id it made.
func (c *cli) notifyTest(target string) string {
	c.t.Helper()
	var res contract.NotifyTestResult
	if err := json.Unmarshal([]byte(c.ok("notify", "test", target, "--json")), &res); err != nil || len(res.Deliveries) != 1 {
		c.t.Fatalf("notify test %s: %+v, %v; want one delivery", target, res, err)
	}
	return res.Deliveries[0]
}

// A workflow with notify: and an agent that fails for good: its receiver
// gets run_failed, then idle, each signed with the secret the daemon has
// in its environment and carrying the delivery id, the event and a body
// with the text line, the ids and the console link; `notify test` reaches
// it too; `notifications` lists them delivered with the URL's query left
// out (issue 28, item 4).
func TestE2ENotifyRunFailedSigned(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	recv := newHookReceiver(t, http.StatusNoContent)
	const secret = "e2e-n0tify-s3cret"
	file := filepath.Join(t.TempDir(), "nt.yaml")
	writeFile(t, file, `
name: nt
agents:
  alice:
    backend: mock
    config: {script: [{fail: "the model is gone", permanent: true}]}
notify:
  - webhook: "`+recv.srv.URL+`/hook?token=q5ecret"
    events: [run_failed, idle]
    secret_env: NOTIFY_E2E_SECRET
kickoff: "@alice go"
`)
	c.startDaemon("NOTIFY_E2E_SECRET=" + secret)
	c.ok("start", file, "--background")

	var failed hookRequest
	c.waitFor("the run_failed notification", func() bool {
		got := recv.requests(func(h hookRequest) bool { return h.event == "run_failed" })
		if len(got) > 0 {
			failed = got[0]
		}
		return len(got) > 0
	})
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(failed.body)
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(failed.sig), []byte(want)) {
		t.Errorf("signature %q does not match the body under the daemon's secret (want %s)", failed.sig, want)
	}
	var body api.NotificationBody
	if err := json.Unmarshal(failed.body, &body); err != nil {
		t.Fatalf("body %s: %v", failed.body, err)
	}
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatal(err)
	}
	if body.Event != "run_failed" || body.Delivery != failed.delivery || body.Workflow != "nt" || body.Tag != "main" || body.Agent != "alice" ||
		body.Target != "alice@nt" || body.IDs["run"] == "" || !strings.Contains(body.Text, "alice@nt failed after 1 attempt(s): ") ||
		!strings.Contains(body.Text, "the model is gone") || body.Console != d.URL()+"/console/team/nt/main" || failed.path != "/hook" {
		t.Errorf("run_failed notification %s at %s", failed.body, failed.path)
	}
	if r := c.ok("runs", "alice@nt", "--json"); !strings.Contains(r, body.IDs["run"]) {
		t.Errorf("the notification's run %s is not alice's: %s", body.IDs["run"], r)
	}
	c.waitFor("the idle notification", func() bool {
		return len(recv.requests(func(h hookRequest) bool { return h.event == "idle" })) == 1
	})

	id := c.notifyTest("@nt")
	c.waitFor("the test notification", func() bool { return len(recv.requests(taken(id))) == 1 })
	if h := recv.requests(byDelivery(id))[0]; h.event != "test" || h.sig == "" {
		t.Errorf("test notification: event %q, signature %q", h.event, h.sig)
	}
	c.waitFor("every notification recorded delivered", func() bool {
		ns := c.notifications()
		for _, n := range ns {
			if n.State != "delivered" {
				return false
			}
		}
		return len(ns) == 3
	})
	n := c.notifications()[id]
	if n.Event != "test" || n.Workflow != "nt" || n.Attempts != 1 || n.URL != recv.srv.URL+"/hook" || n.DeliveredAt.IsZero() {
		t.Errorf("listed test notification %+v", n)
	}
	out := c.ok("notifications")
	if !strings.Contains(out, id) || !strings.Contains(out, "@nt") || !strings.Contains(out, "delivered") || strings.Contains(out, "q5ecret") {
		t.Errorf("notifications:\n%s", out)
	}
	if logs, err := os.ReadFile(filepath.Join(c.home, api.LogDir, "daemon.log")); err == nil && strings.Contains(string(logs), secret) {
		t.Errorf("the daemon's log holds the secret")
	}
	for _, cmd := range []string{"notifications", "notify test", "notify"} {
		r := c.run(append(strings.Fields(cmd), "--help")...)
		if r.code != 0 || !strings.Contains(r.stdout, "agent-worker "+cmd) {
			t.Errorf("%s --help: exit %d, stdout %q", cmd, r.code, r.stdout)
		}
	}
	if r := c.run("notify", "test", "alice@nt"); r.code != api.ExitUsage || !strings.Contains(r.stderr, "takes a workflow") {
		t.Errorf("notify test of an agent: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := c.run("notify", "test", "@nope"); r.code != api.ExitNotFound {
		t.Errorf("notify test of an unknown workflow: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A receiver that answers 500 for a while gets the delivery again, under
// the same id, until it answers 2xx, and then never again; a delivery
// still pending when the daemon stops is sent by the next daemon; a
// receiver that refuses one (a 4xx) fails it at once, and `notifications
// --failed` shows it with the receiver's answer (issue 28, item 4).
func TestE2ENotifyRetriedAcrossRestart(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	recv := newHookReceiver(t, http.StatusInternalServerError)
	file := filepath.Join(t.TempDir(), "nr.yaml")
	writeFile(t, file, `
name: nr
agents:
  alice: {backend: mock}
notify:
  - {webhook: "`+recv.srv.URL+`/flaky", events: [question]}
`)
	c.startDaemon()
	c.ok("start", file, "--background")

	first := c.notifyTest("@nr")
	c.waitFor("two refused attempts", func() bool { return len(recv.requests(byDelivery(first))) >= 2 })
	if n := c.notifications()[first]; n.State != "pending" || n.Attempts < 1 || n.LastStatus != 500 ||
		n.LastError != "HTTP 500 Internal Server Error: receiver says Internal Server Error" {
		t.Errorf("while the receiver fails: %+v", n)
	}
	recv.setStatus(http.StatusOK)
	c.waitFor("the delivery once the receiver is back", func() bool { return c.notifications()[first].State == "delivered" })

	// Down again: a new delivery is pending when the daemon stops.
	recv.setStatus(http.StatusServiceUnavailable)
	pending := c.notifyTest("@nr")
	c.waitFor("a refused attempt", func() bool { return len(recv.requests(byDelivery(pending))) >= 1 })
	c.ok("stop", "--all")
	recv.setStatus(http.StatusOK)
	c.startDaemon()
	c.waitFor("the pending delivery sent by the next daemon", func() bool { return len(recv.requests(taken(pending))) == 1 })
	c.waitFor("it recorded delivered", func() bool { return c.notifications()[pending].State == "delivered" })

	// Each delivery id was taken once: the first, long delivered, was
	// never sent again, by this daemon or the one before.
	if got := recv.requests(taken(first)); len(got) != 1 {
		t.Errorf("the first delivery was taken %d times, want once", len(got))
	}
	for _, h := range recv.requests(func(hookRequest) bool { return true }) {
		if h.delivery != first && h.delivery != pending {
			t.Errorf("an unexpected delivery %s (%s)", h.delivery, h.event)
		}
	}

	recv.setStatus(http.StatusGone)
	gone := c.notifyTest("@nr")
	var failed map[string]api.Notification
	c.waitFor("the refused delivery failed", func() bool {
		failed = c.notifications("--failed")
		return len(failed) == 1
	})
	if n := failed[gone]; n.State != "failed" || n.Attempts != 1 || n.LastStatus != 410 || n.LastError != "HTTP 410 Gone: receiver says Gone" {
		t.Errorf("notifications --failed: %+v", failed)
	}
	if out := c.ok("notifications", "--failed"); !strings.Contains(out, gone) || !strings.Contains(out, "HTTP 410 Gone") || strings.Contains(out, first) {
		t.Errorf("notifications --failed:\n%s", out)
	}
}

// A bad webhook URL is refused when the workflow loads, at its
// file:line:col; a daemon started with a bad --notify-config, or one whose
// secret_env it lacks, does not start and says where (issue 28, item 4).
func TestE2ENotifyBadConfig(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.yaml")
	writeFile(t, file, `
name: bad
agents:
  alice: {backend: mock}
notify:
  - webhook: "ftp://hooks.example.com/x"
    events: [idle, naps]
`)
	r := c.run("start", file, "--background")
	if r.code != api.ExitUsage || !strings.Contains(r.stderr, file+`:6:14: notify 1: webhook must be an http:// or https:// URL, not "ftp:"`) ||
		!strings.Contains(r.stderr, file+`:7:20: notify 1: unknown event "naps"`) {
		t.Errorf("start with a bad webhook: exit %d, stderr %q", r.code, r.stderr)
	}
	secretless := filepath.Join(dir, "secretless.yaml")
	writeFile(t, secretless, `
name: secretless
agents:
  alice: {backend: mock}
notify:
  - {webhook: "https://hooks.example.com/x", events: [idle], secret_env: NOT_SET_ANYWHERE}
`)
	if r := c.run("start", secretless, "--background"); r.code != api.ExitUsage ||
		!strings.Contains(r.stderr, secretless+":6: notify 1: secret_env NOT_SET_ANYWHERE is not set in the daemon's environment") {
		t.Errorf("start with a secret the daemon lacks: exit %d, stderr %q", r.code, r.stderr)
	}
	c.ok("stop", "--all")

	conf := filepath.Join(dir, "notify.yaml")
	writeFile(t, conf, "- {webhook: \"https://hooks.example.com/x\", events: [idle]}\n- {webhook: \"hooks.example.com\", events: [idle]}\n")
	cmd := exec.Command(binary, "daemon")
	cmd.Env = append(c.env(), "AGENT_WORKER_NOTIFY_CONFIG="+conf)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), conf+":2:13: notify 2: webhook must be an http:// or https:// URL, with its scheme") {
		t.Errorf("daemon with a bad --notify-config: %v\n%s", err, out)
	}
	if _, err := api.ReadDaemonInfo(c.home); err == nil {
		t.Errorf("a daemon with a bad --notify-config started")
	}
}

// The loop guard pausing a team and a budget stopping one are each told
// to the webhooks that listen for them, once, with the line the channel
// got (issue 28, item 4).
func TestE2ENotifyLoopGuardAndBudget(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	recv := newHookReceiver(t, http.StatusOK)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pingpong.yaml"), `name: pingpong
loop_guard: {max_rounds: 4}
agents:
  alice: {backend: mock, config: {script: [{reply: "@bob ping"}]}}
  bob: {backend: mock, config: {script: [{reply: "@alice pong"}]}}
kickoff: "@alice start"
notify: [{webhook: "`+recv.srv.URL+`/guard", events: [loop_guard, over_budget]}]
`)
	writeFile(t, filepath.Join(dir, "spend.yaml"), `name: spend
budget: {runs: 1}
agents:
  carol: {backend: mock, config: {script: [{result: "done"}]}}
kickoff: "@carol once"
notify: [{webhook: "`+recv.srv.URL+`/budget", events: [over_budget]}]
`)
	c.ok("start", filepath.Join(dir, "pingpong.yaml"), "--background")
	c.ok("start", filepath.Join(dir, "spend.yaml"), "--background")
	c.waitFor("the loop guard's notification", func() bool {
		return len(recv.requests(func(h hookRequest) bool { return h.event == "loop_guard" })) == 1
	})
	var guard api.NotificationBody
	if err := json.Unmarshal(recv.requests(func(h hookRequest) bool { return h.event == "loop_guard" })[0].body, &guard); err != nil ||
		guard.Target != "@pingpong" || !strings.Contains(guard.Text, "@pingpong is paused: 4 messages in a row came from agents") {
		t.Errorf("loop_guard notification %+v, %v", guard, err)
	}

	c.waitFor("carol's run", func() bool { return strings.Contains(c.ok("peek", "@spend"), "[carol] done") })
	c.ok("send", "@spend", "@carol once more")
	c.waitFor("the budget's notification", func() bool {
		return len(recv.requests(func(h hookRequest) bool { return h.event == "over_budget" })) == 1
	})
	h := recv.requests(func(h hookRequest) bool { return h.event == "over_budget" })[0]
	var spent api.NotificationBody
	if err := json.Unmarshal(h.body, &spent); err != nil || h.path != "/budget" || spent.Workflow != "spend" ||
		!strings.Contains(spent.Text, "@spend is over its budget: runs: 1 of 1") {
		t.Errorf("over_budget notification at %s: %+v, %v", h.path, spent, err)
	}
}

// In a cluster every member sends from the one outbox, and each delivery
// reaches its receiver once; a member killed with SIGKILL is reported
// (member_down) by the member that takes its work back, to the webhooks of
// the daemon-wide --notify-config (issue 28, item 4).
func TestE2EClusterNotifyMemberDown(t *testing.T) {
	recv := newHookReceiver(t, http.StatusOK)
	conf := filepath.Join(t.TempDir(), "notify.yaml")
	writeFile(t, conf, "notify:\n  - {webhook: \""+recv.srv.URL+"/down\", events: [member_down]}\n")
	ms, _ := startCluster(t, 2, "AGENT_WORKER_NOTIFY_CONFIG="+conf)
	a, b := ms[0], ms[1]
	file := filepath.Join(t.TempDir(), "nc.yaml")
	writeFile(t, file, "name: nc\nagents:\n  alice: {backend: mock}\nnotify: [{webhook: \""+recv.srv.URL+"/wf\", events: [idle]}]\n")
	a.ok("start", file, "--background")
	var ids []string
	for i := range 6 {
		ids = append(ids, ms[i%2].notifyTest("@nc"))
	}
	for _, id := range ids {
		a.waitFor("test delivery "+id, func() bool { return len(recv.requests(byDelivery(id))) >= 1 })
	}
	b.waitFor("every test recorded delivered", func() bool {
		ns := b.notifications()
		for _, id := range ids {
			if ns[id].State != "delivered" {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		if n := len(recv.requests(byDelivery(id))); n != 1 {
			t.Errorf("delivery %s reached the receiver %d times, want once", id, n)
		}
	}

	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	b.waitFor("member_down", func() bool {
		return len(recv.requests(func(h hookRequest) bool { return h.event == "member_down" })) >= 1
	})
	down := recv.requests(func(h hookRequest) bool { return h.event == "member_down" })
	var body api.NotificationBody
	if err := json.Unmarshal(down[0].body, &body); err != nil || len(down) != 1 || down[0].path != "/down" || body.IDs["member"] != a.id ||
		!strings.Contains(body.Text, "cluster member "+a.id) || !strings.Contains(body.Text, b.id+" took back") {
		t.Errorf("member_down notifications %d, first %s: %v", len(down), down[0].body, err)
	}
}
