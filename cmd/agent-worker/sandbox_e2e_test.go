package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
	sb "github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// needLandlock skips a test of the sandbox where the kernel cannot
// confine runs, saying why.
func needLandlock(t *testing.T) {
	t.Helper()
	if st := sb.Probe(); !st.Available() {
		t.Skipf("the run sandbox needs Landlock, which this kernel does not offer: %s", st.Why)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skipf("the network probes use bash's /dev/tcp, and bash is not installed: %v", err)
	}
}

// sandboxOn reports whether c's daemon confines runs, where the kernel
// lets it: the real CLIs' tests then prove they work inside the sandbox.
func sandboxOn(c *cli) bool {
	return !sb.Probe().Available() || strings.Contains(c.ok("status"), "sandbox:   on (landlock ABI")
}

// listenLeak listens on a local TCP port that is not the daemon's and
// answers every connection with a canary: a run that prints it reached
// the port.
func listenLeak(t *testing.T) (port int, canary string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	canary = "LEAKED-" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(conn, canary+"\n")
			conn.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, canary
}

// listenUDP listens on a local UDP port and counts the datagrams it gets.
func listenUDP(t *testing.T) (port int, got func() int64) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	var n atomic.Int64
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			n.Add(1)
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr).Port, n.Load
}

// tcpProbe is a shell line that connects to port on loopback and prints
// what it is sent.
func tcpProbe(port int) string {
	return fmt.Sprintf(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && head -1 <&3'`, port)
}

// mptcpProbe is a shell line that connects to port on loopback over
// Multipath TCP, which Landlock's TCP rules do not cover (a seccomp filter
// refuses such sockets), and prints what it is sent.
func mptcpProbe(port int) string {
	return fmt.Sprintf(`/usr/bin/python3 -c '
import socket
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
    s.connect(("127.0.0.1", %d))
    print(s.recv(64).decode())
except OSError as e:
    print("connect to port %d over MPTCP:", e)
'`, port, port)
}

// metricValue reads one sample of the daemon's /metrics (labels "": the
// metric has none).
func metricValue(t *testing.T, d api.DaemonInfo, name, labels string) float64 {
	t.Helper()
	req, err := http.NewRequest("GET", d.URL()+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v\n%s", resp.StatusCode, err, body)
	}
	sample := name // a metric without labels when labels is ""
	if labels != "" {
		sample += "{" + labels + "}"
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("metric %s{%s}: %v", name, labels, err)
	}
	return v
}

// A hostile run is refused every way out of its sandbox and still does
// its own work (issue 26): a mock agent whose shell steps try to read the
// daemon's token (by absolute and relative path), its database, another
// agent's workspace and a key planted in the user's home, to write into
// the daemon's home, its plugins.d and plugins.verified and the plugins
// directory it was given, and to connect from a shell command to a local
// port and to the daemon's own port. Each attempt fails with the OS error
// and its transcript names the path or port as outside the sandbox;
// /metrics counts the refusals. The same run writes a file in its
// workspace and posts through the daemon's MCP tools, and a grandchild
// that setsid()s away is confined too. It runs twice: once in a process
// started for the run (the launcher applies its policy) and once in a
// warm spare (the sdk narrows its base layer).
func TestE2ESandboxHostileRun(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	c := newCLI(t)
	userHome := t.TempDir()
	if err := os.MkdirAll(filepath.Join(userHome, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(userHome, ".ssh", "id_ed25519"), "PLANTED-SSH-KEY\n")
	c.startDaemon("HOME=" + userHome)
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatal(err)
	}
	home := realPath(t, c.home)
	leakPort, canary := listenLeak(t)

	// Another agent, with a file in its own workspace (written by the
	// test, so that evil's first run is the first to start a process).
	c.ok("new", "victim", "--backend", "mock")
	victimFile := filepath.Join(home, "workspaces", "global", "main", "victim", "secret.txt")
	if err := os.MkdirAll(filepath.Dir(victimFile), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, victimFile, "VICTIM-SECRET\n")

	attacks := map[string]struct {
		shell   string
		refused []string // each must show in the transcript as outside the sandbox
	}{
		"read daemon.json":            {"cat " + filepath.Join(home, "daemon.json"), []string{filepath.Join(home, "daemon.json")}},
		"read daemon.json relatively": {"cat ../../../../daemon.json", []string{filepath.Join(home, "daemon.json")}},
		"read the database":           {"head -c 16 " + filepath.Join(home, "agent-worker.db"), []string{filepath.Join(home, "agent-worker.db")}},
		"read another agents file":    {"cat ../victim/secret.txt", []string{victimFile}},
		"read a key in the user home": {"cat " + filepath.Join(userHome, ".ssh", "id_ed25519"), []string{filepath.Join(userHome, ".ssh", "id_ed25519")}},
		"write into the daemon home":  {"echo owned > " + filepath.Join(home, "owned"), []string{filepath.Join(home, "owned")}},
		"write into plugins.d":        {"echo owned > " + filepath.Join(home, "plugins.d", "agent-worker-backend-evil"), []string{filepath.Join(home, "plugins.d", "agent-worker-backend-evil")}},
		"write into plugins.verified": {"echo owned > " + filepath.Join(home, "plugins.verified", "evil"), []string{filepath.Join(home, "plugins.verified", "evil")}},
		"write into the plugins dir":  {"echo owned > " + filepath.Join(pluginsDir, "agent-worker-backend-evil"), []string{filepath.Join(pluginsDir, "agent-worker-backend-evil")}},
		"connect to a local port":     {tcpProbe(leakPort), []string{"TCP port " + strconv.Itoa(leakPort)}},
		"connect to the daemon port":  {tcpProbe(d.Port) + ` && echo REACHED-DAEMON`, []string{"TCP port " + strconv.Itoa(d.Port)}},
	}
	udpPort, udpGot := listenUDP(t)
	attacks["send a UDP datagram"] = struct {
		shell   string
		refused []string
	}{fmt.Sprintf(`bash -c 'echo UDP-LEAK > /dev/udp/127.0.0.1/%d'`, udpPort), []string{"UDP port " + strconv.Itoa(udpPort)}}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		attacks["connect over multipath TCP"] = struct {
			shell   string
			refused []string
		}{mptcpProbe(leakPort), []string{"TCP port " + strconv.Itoa(leakPort)}}
	} else {
		t.Logf("the Multipath TCP probe needs /usr/bin/python3, which is not installed: %v", err)
	}
	// A grandchild in a session of its own, spawned first: the run's last
	// shell step shows what it got (it waits for its report, which the
	// run's end would otherwise cut short: the run's cgroup ends it).
	grandchild := `cat ` + filepath.Join(home, "daemon.json") + ` > grandchild.tmp 2>&1; echo "sid=$(ps -o sid= -p $$) pid=$$" >> grandchild.tmp; mv grandchild.tmp grandchild.txt`
	script := []map[string]any{{"spawn": []string{"setsid", "sh", "-c", grandchild}}}
	for _, name := range sortedKeys(attacks) {
		script = append(script, map[string]any{"shell": "echo '== " + name + "'; " + attacks[name].shell})
	}
	script = append(script,
		map[string]any{"shell": "echo mine > mine.txt && cat mine.txt && mkdir -p build && printf 'int main(){return 0;}' > build/m.c && echo built"},
		map[string]any{"shell": "echo '== grandchild'; for i in $(seq 1000); do [ -e grandchild.txt ] && break; sleep 0.01; done; cat grandchild.txt"},
		map[string]any{"tool": "channel_send", "args": map[string]any{"message": "evil posts through the daemon"}},
		map[string]any{"result": "tried"})
	cfg, _ := json.Marshal(map[string]any{"script": script})
	c.ok("new", "evil", "--backend", "mock", "--config", string(cfg))

	before := metricValue(t, d, "agent_worker_sandbox_refusals_total", `agent="evil",workflow="global"`)
	for attempt := 1; attempt <= 2; attempt++ {
		os.Remove(filepath.Join(home, "workspaces", "global", "main", "evil", "grandchild.txt"))
		os.Remove(filepath.Join(home, "workspaces", "global", "main", "evil", "grandchild.tmp"))
		c.ok("ask", "evil", "try your luck")
		a := c.agent("evil")
		if len(a.Runs) < attempt || a.Runs[0].State != "succeeded" {
			t.Fatalf("run %d of evil: %+v", attempt, a.Runs)
		}
		logs := c.ok("logs", a.Runs[0].ID)
		out := outputOf(logs) // what the commands printed, not the commands
		for name, at := range attacks {
			section := between(out, "== "+name, "== ")
			if !strings.Contains(section, "Permission denied") {
				t.Errorf("run %d: %s was not refused by the OS:\n%s", attempt, name, section)
			}
			for _, what := range at.refused {
				if !strings.Contains(logs, what) || !strings.Contains(logs, what+" is outside the agent's sandbox") && !strings.Contains(logs, what+" is outside") {
					t.Errorf("run %d: the transcript does not name %s as outside the sandbox (%s)", attempt, what, name)
				}
			}
		}
		for what, leak := range map[string]string{"the admin token": d.Token, "the database": "SQLite format", "another agent's file": "VICTIM-SECRET",
			"the planted key": "PLANTED-SSH-KEY", "a local port": canary, "the daemon's port": "REACHED-DAEMON"} {
			if strings.Contains(out, leak) {
				t.Errorf("run %d reached %s:\n%s", attempt, what, logs)
			}
		}
		for _, own := range []string{"mine\n", "built"} {
			if !strings.Contains(out, own) {
				t.Errorf("run %d did not do its own work (%q missing from its output):\n%s", attempt, own, logs)
			}
		}
		if post := between(logs, "tool call   channel_send ", "\nend:"); !strings.Contains(post, `{"message":"evil posts through the daemon"}`) || !strings.Contains(post, "result      sent as #") {
			t.Errorf("run %d did not post through the daemon:\n%s", attempt, logs)
		}
		for _, f := range []string{filepath.Join(home, "owned"), filepath.Join(home, "plugins.d", "agent-worker-backend-evil"),
			filepath.Join(home, "plugins.verified", "evil"), filepath.Join(pluginsDir, "agent-worker-backend-evil")} {
			if _, err := os.Stat(f); err == nil {
				t.Errorf("run %d wrote %s", attempt, f)
			}
		}
		if gc := between(out, "== grandchild", "== "); !strings.Contains(gc, "sid=") || !strings.Contains(gc, "Permission denied") {
			t.Errorf("run %d: a grandchild in a session of its own was not refused daemon.json:\n%s", attempt, gc)
		}
	}
	if n := udpGot(); n > 0 {
		t.Errorf("the UDP listener got %d datagrams from the runs", n)
	}
	if out := c.ok("peek"); !strings.Contains(out, "evil posts through the daemon") {
		t.Errorf("the channel lacks evil's posts:\n%s", out)
	}
	if after := metricValue(t, d, "agent_worker_sandbox_refusals_total", `agent="evil",workflow="global"`); after-before < float64(2*len(attacks)) {
		t.Errorf("/metrics counts %v sandbox refusals for evil, want at least %d", after-before, 2*len(attacks))
	}
	c.waitFor("plugins to show the second run took a spare", func() bool { return strings.Contains(c.ok("plugins"), "1/2 used, 1 cold") })
	t.Logf("the last transcript:\n%s", c.ok("logs", c.agent("evil").Runs[0].ID))
	if out := c.ok("status"); !strings.Contains(out, "sandbox:   on (landlock ABI") {
		t.Errorf("status does not say runs are sandboxed:\n%s", out)
	}
}

// processGone reports a process that has ended: no longer there, or a
// zombie its parent has not reaped.
func processGone(pid int) bool { return !testkit.Alive(pid) }

// waitEscaped waits until the child a script started with
// `setsid sh -c 'exec sleep …' & echo $!` has left the run's process group
// and runs sleep. $! is written right after the fork, before the child's
// setsid(2): a daemon killed in between would end the child with the run's
// group, and a test of what ends an escaped child would test nothing.
func (c *cli) waitEscaped(pid int) {
	c.t.Helper()
	c.waitFor(fmt.Sprintf("the escaped child %d to lead a session of its own", pid), func() bool {
		p, ok := testkit.ReadProc(pid)
		return ok && p.PGID == pid && p.Comm == "sleep"
	})
}

// between is the part of s after the first from, up to the next to.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}

// outputOf is a transcript as `agent-worker logs` prints it without its
// tool calls (their lines and any continuation lines): what the commands
// printed, their results and what the sandbox and the gate said. A mock
// shell step is a tool call whose arguments hold the whole script, so a
// marker the script echoes, or a word it prints on success, must be looked
// for in what it printed, not in the command that would print it.
func outputOf(logs string) string {
	var b strings.Builder
	inCall := false
	for _, l := range strings.SplitAfter(logs, "\n") {
		// A line of an event starts with its time, 15:04:05, and a space;
		// a continuation line with spaces.
		if len(l) > 9 && l[2] == ':' && l[5] == ':' && l[8] == ' ' {
			inCall = strings.HasPrefix(strings.TrimLeft(l[9:], " "), "tool call ")
		} else if !strings.HasPrefix(l, " ") {
			inCall = false // the run's header or its end
		}
		if !inCall {
			b.WriteString(l)
		}
	}
	return b.String()
}

// sortedKeys is m's keys in order, so a script is the same every run.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// An agent in a git worktree commits its own work inside the sandbox, but
// cannot write its repository's .git/config or hooks, read the user's
// checkout or another agent's worktree (issue 26). An agent whose
// sandbox says mode: off is warned about in info and status, and its run
// is not confined.
func TestE2ESandboxWorktree(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	repo := newRepoE2E(t)
	c := newCLI(t)
	writeFile(t, filepath.Join(repo, ".gitignore"), ".workflow/\nteam.yaml\nchecked-out-secret.txt\n")
	gitE2E(t, repo, "add", ".gitignore")
	gitE2E(t, repo, "commit", "-q", "-m", "first")
	writeFile(t, filepath.Join(repo, "checked-out-secret.txt"), "CHECKOUT-SECRET\n")
	home := realPath(t, c.home)
	repoReal := realPath(t, repo)
	bobTree := filepath.Join(home, "worktrees", "team", "main", "bob")
	leadTree := filepath.Join(home, "worktrees", "team", "main", "lead")
	// The skill lead walks with the effort tools, in the workflow's own
	// skills folder.
	skills := realPath(t, t.TempDir())
	writeFile(t, filepath.Join(skills, "small", "SKILL.md"), smallSkill)
	file := filepath.Join(repo, "team.yaml")
	writeFile(t, file, fmt.Sprintf(`name: team
workspace: {git: worktree}
approvals: {integrate: false} # the planner integrates on its own (no checks: would wait for a person)
skills: [%[4]s]
agents:
  alice:
    backend: mock
    config:
      script:
        - shell: "echo from alice > a.txt && git add a.txt && git -c user.name=alice -c user.email=a@example.com commit -qm 'alice adds a.txt' && echo COMMITTED"
        - shell: "if command -v cc >/dev/null; then printf 'int main(void){return 0;}' > m.c && cc -o m m.c && ./m && echo BUILT; else echo BUILT without a compiler; fi"
        - shell: "echo '== config'; echo '[core] hooksPath = /tmp' >> %[1]s/.git/config"
        - shell: "echo '== hook'; printf '#!/bin/sh\necho pwned' > %[1]s/.git/hooks/post-commit"
        - shell: "echo '== checkout'; cat %[1]s/checked-out-secret.txt"
        - shell: "echo '== bob'; ls %[2]s"
        - result: done
  bob:
    backend: mock
    config: {script: [{shell: "echo from bob > b.txt"}, {result: done}]}
  lead:
    backend: mock
    can_spawn: true
    config:
      script:
        - {tool: channel_read, args: {limit: 5}}
        - {tool: my_inbox}
        - {tool: my_inbox_ack, args: {until_seq: 1}}
        - {tool: my_status_set, args: {task: "trying every tool"}}
        - {tool: team_members}
        - {tool: team_doc_write, args: {content: "# notes\n"}}
        - {tool: team_doc_append, args: {content: "- lead was here\n"}}
        - {tool: team_doc_read}
        - {tool: team_doc_create, args: {file: "plan.md", content: "plan"}}
        - {tool: team_doc_list}
        - {tool: team_proposal_create, args: {type: decision, title: "tabs or spaces", options: [tabs, spaces]}}
        - {tool: team_vote, args: {proposal: "{{step.11.id}}", choice: tabs}}
        - {tool: team_proposal_status, args: {proposal: "{{step.11.id}}"}}
        - {tool: team_proposal_cancel, args: {proposal: "{{step.11.id}}"}}
        - {tool: resource_create, args: {content: "a large result"}}
        - {tool: resource_read, args: {id: "{{step.15.id}}"}}
        - {tool: task_create, args: {title: "one task"}}
        - {tool: task_create, args: {title: "another task"}}
        - {tool: task_list}
        - {tool: task_claim, args: {id: "{{step.17.id}}"}}
        - {tool: task_progress, args: {id: "{{step.17.id}}", note: "half way", percent: 50}}
        - {tool: task_complete, args: {id: "{{step.17.id}}", result: "done"}}
        - {tool: task_claim, args: {id: "{{step.18.id}}"}}
        - {tool: task_release, args: {id: "{{step.18.id}}"}}
        - {tool: task_claim, args: {id: "{{step.18.id}}"}}
        - {tool: task_fail, args: {id: "{{step.18.id}}", reason: "on purpose"}}
        - {tool: worktree_status}
        - {tool: agent_spawn, args: {name: helper, system_prompt: "help", backend: mock}}
        - {tool: agent_stop, args: {name: helper}}
        - {tool: worktree_discard, args: {agent: bob, reason: "not needed", force: true}}
        - {tool: worktree_integrate, args: {agent: alice}}
        - {tool: worktree_queue}
        - {tool: team_search, args: {query: "notes"}}
        - {tool: ask_user, args: {question: "may lead try every tool?", options: ["yes", "no"]}}
        - {tool: effort_start, args: {dir: %[5]s, skill: small}}
        - {tool: effort_status}
        - {tool: effort_log, args: {text: "lead walks an effort from the sandbox"}}
        - {tool: effort_continue, args: {token: "{{step.35.token}}", proof: {plan_summary: "try every tool"}}}
        - {tool: effort_finish, args: {token: "{{step.38.token}}", proof: {tests_run: 0}, notes: "every tool tried"}}
        - {tool: task_create, args: {title: "a task to cancel"}}
        - {tool: task_cancel, args: {id: "{{last.id}}", reason: "not needed"}}
        - {tool: my_tasks}
        - {tool: channel_send, args: {message: "lead tried every tool"}}
        - result: done
  loose:
    backend: mock
    sandbox: {mode: off}
    config: {script: [{shell: "cat %[3]s/daemon.json"}, {result: done}]}
kickoff: "@alice @bob go"
`, repoReal, bobTree, home, skills, leadTree))
	c.ok("start", file, "--background")
	c.waitFor("alice's run", func() bool { a := c.agent("alice@team"); return len(a.Runs) > 0 && a.Runs[0].State != "running" })
	a := c.agent("alice@team")
	if a.Runs[0].State != "succeeded" {
		t.Fatalf("alice's run: %+v", a.Runs[0])
	}
	logs := c.ok("logs", a.Runs[0].ID)
	out := outputOf(logs) // what the commands printed, not the commands
	if !strings.Contains(out, "COMMITTED") || !strings.Contains(out, "BUILT") {
		t.Errorf("alice could not commit and build in her worktree:\n%s", logs)
	}
	if got := gitE2E(t, repo, "log", "-1", "--format=%s", "aw/team/main/alice"); got != "alice adds a.txt" {
		t.Errorf("alice's branch head = %q", got)
	}
	for _, section := range []string{"config", "hook", "checkout", "bob"} {
		if s := between(out, "== "+section, "== "); !strings.Contains(s, "Permission denied") {
			t.Errorf("alice was not refused %s:\n%s", section, s)
		}
	}
	for _, refused := range []string{filepath.Join(repoReal, ".git", "config") + " is outside the agent's sandbox (read-only)",
		filepath.Join(repoReal, "checked-out-secret.txt") + " is outside the agent's sandbox (not readable)"} {
		if !strings.Contains(logs, refused) {
			t.Errorf("the transcript lacks %q:\n%s", refused, logs)
		}
	}
	if b, err := os.ReadFile(filepath.Join(repo, ".git", "config")); err != nil || strings.Contains(string(b), "hooksPath") {
		t.Errorf("alice wrote the repository's config (%v):\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "hooks", "post-commit")); err == nil {
		t.Error("alice wrote a hook into the repository")
	}
	if strings.Contains(logs, "CHECKOUT-SECRET") {
		t.Errorf("alice read the user's checkout:\n%s", logs)
	}

	// Every daemon tool works from a confined run (bob's worktree is
	// discarded, so his run must have ended).
	c.waitFor("bob's run to end", func() bool {
		b := c.agent("bob@team")
		return len(b.Runs) > 0 && b.Runs[0].State != "running" && b.State != "running"
	})
	// The notices lead's tools post (a proposal, tasks) mention bob: paused,
	// he cannot start a run that would hold the worktree lead discards.
	c.ok("pause", "bob@team")
	if out := c.ok("ask", "lead@team", "try every tool"); !strings.Contains(out, "done") {
		t.Errorf("lead's ask printed %q", out)
	}
	leadLogs := c.ok("logs", c.agent("lead@team").Runs[0].ID)
	for _, name := range tools.Names {
		if name == tools.ApprovalWait {
			continue // it waits for a person: TestE2EGatedShellCommandsOfTheSDKBackend calls it from a confined run
		}
		if !strings.Contains(leadLogs, "tool call   "+name+" ") {
			t.Errorf("lead did not call %s:\n%s", name, leadLogs)
		}
	}
	if strings.Contains(leadLogs, "tool error") {
		t.Errorf("a daemon tool failed from a confined run:\n%s", leadLogs)
	}
	var effort api.EffortShow
	if err := json.Unmarshal([]byte(c.ok("effort", "show", "effort-1", "--json")), &effort); err != nil {
		t.Fatal(err)
	}
	if effort.Agent != "lead@team:main" || effort.State != "finished" || effort.Dir != leadTree {
		t.Errorf("lead's effort = %+v, want finished on %s", effort.EffortRow, leadTree)
	}
	if b, err := os.ReadFile(filepath.Join(leadTree, "1_SMALL_LOG.md")); err != nil || !strings.Contains(string(b), "lead walks an effort from the sandbox") {
		t.Errorf("effort_log did not write lead's log: %q, %v", b, err)
	}

	// The agent with mode: off: warned about, and not confined.
	if out := c.ok("info", "loose@team"); !strings.Contains(out, "sandbox off for this agent") {
		t.Errorf("info does not warn that loose is unconfined:\n%s", out)
	}
	if out := c.ok("status"); !strings.Contains(out, "loose@team: sandbox off for this agent") {
		t.Errorf("status does not warn that loose is unconfined:\n%s", out)
	}
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil || d.Token == "" {
		t.Fatalf("daemon.json: %+v, %v", d, err)
	}
	if out := c.ok("ask", "loose@team", "show me"); !strings.Contains(c.ok("logs", c.agent("loose@team").Runs[0].ID), d.Token) {
		t.Errorf("the unconfined agent's run could not read daemon.json (ask printed %q)", out)
	}
}

// Where the kernel cannot confine runs (simulated here: the daemon is
// told its kernel has no Landlock), --sandbox required refuses every run
// with an error that says why and how to go on, and status says so;
// --sandbox auto runs them unconfined and says that (issue 26).
func TestE2ESandboxUnavailable(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	const why = "simulated: this kernel has no Landlock"
	c.startDaemon("AGENT_WORKER_SANDBOX=required", "AGENT_WORKER_TEST_NO_LANDLOCK="+why)
	status := c.ok("status")
	for _, want := range []string{"sandbox:   unavailable: " + why + "; runs are refused (--sandbox required)", "problems:", "runs are not sandboxed: " + why} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}
	c.ok("new", "bob", "--backend", "mock", "--config", `{"script": [{"result": "ran"}]}`)
	r := c.run("ask", "bob", "hello")
	if r.code == 0 {
		t.Fatalf("ask under --sandbox required without Landlock succeeded: %s", r.stdout)
	}
	for _, want := range []string{"requires a sandbox (--sandbox required)", why, "--sandbox auto"} {
		if !strings.Contains(r.stderr+r.stdout, want) {
			t.Errorf("the refusal lacks %q: exit %d\nstdout: %s\nstderr: %s", want, r.code, r.stdout, r.stderr)
		}
	}
	if a := c.agent("bob"); a.InboxDepth != 1 {
		t.Errorf("the refused run lost bob's message: inbox %d", a.InboxDepth)
	}

	c.ok("stop", "--all")
	c.startDaemon("AGENT_WORKER_SANDBOX=auto", "AGENT_WORKER_TEST_NO_LANDLOCK="+why)
	if out := c.ok("status"); !strings.Contains(out, "sandbox:   unavailable: "+why+"; runs start unconfined (--sandbox auto)") {
		t.Errorf("status under auto:\n%s", out)
	}
	c.ok("resume", "bob")
	if out := c.ok("ask", "bob", "again"); !strings.Contains(out, "ran") {
		t.Errorf("ask under auto printed %q", out)
	}
}

// The sdk backend in the sandbox, driven by the scripted model (issue
// 26): run_shell commands the model asks for cannot read daemon.json or a
// key in the user's home, write into the daemon's home, or connect to a
// local port, the daemon's or the model's; the model reads each refusal
// in its tool result, with a line naming what lies outside the sandbox.
// The same run still reaches the model, works in its directory and posts
// through the daemon's MCP server.
func TestE2ESandboxSDKToolCalls(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	c := newCLI(t)
	userHome := t.TempDir()
	writeFile(t, filepath.Join(userHome, "secret.key"), "PLANTED-KEY\n")
	home := realPath(t, c.home)
	leakPort, canary := listenLeak(t)
	m := startModel(t, false)
	modelPort := m.URL[strings.LastIndex(m.URL, ":")+1:]
	daemon := exec.Command(binary, "daemon")
	daemon.Env = append(c.env(), "HOME="+userHome, "ANTHROPIC_BASE_URL="+m.URL, "ANTHROPIC_API_KEY=test-key")
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	go daemon.Wait()
	c.waitFor("the daemon", func() bool { d, err := api.ReadDaemonInfo(c.home); return err == nil && d.PID == daemon.Process.Pid })
	d, err := api.ReadDaemonInfo(c.home)
	if err != nil {
		t.Fatal(err)
	}

	shell := func(cmd string) modelTurn {
		return modelTurn{"Tools": []map[string]any{{"Name": "run_shell", "Args": map[string]any{"command": cmd}}}}
	}
	m.add(t, shell("cat "+filepath.Join(home, "daemon.json")))
	m.add(t, shell("cat "+filepath.Join(userHome, "secret.key")))
	m.add(t, shell("echo owned > "+filepath.Join(home, "owned")))
	m.add(t, shell(tcpProbe(leakPort)))
	m.add(t, shell(tcpProbe(d.Port)))
	m.add(t, shell("bash -c 'exec 3<>/dev/tcp/127.0.0.1/"+modelPort+"' && echo REACHED-$((40+2))"))
	m.add(t, shell("echo mine > mine.txt && cat mine.txt"))
	m.add(t, modelTurn{"Tools": []map[string]any{{"Name": "channel_send", "Args": map[string]any{"message": "dora posts from the sandbox"}}}})
	m.add(t, modelTurn{"Text": "tried everything"})

	c.ok("new", "dora", "--backend", "sdk", "--model", "anthropic/claude-sonnet-4-5")
	if out := c.ok("ask", "dora", "break out"); !strings.Contains(out, "tried everything") {
		t.Fatalf("ask printed %q", out)
	}
	reqs := m.requests(t)
	if len(reqs) != 9 {
		t.Fatalf("the model got %d requests, want 9 (one per turn)", len(reqs))
	}
	results := func(i int) string { return string(reqs[i].RawBody) } // request i carries the result of turn i-1
	for i, want := range []string{
		filepath.Join(home, "daemon.json") + " is outside the agent's sandbox",
		filepath.Join(userHome, "secret.key") + " is outside the agent's sandbox",
		filepath.Join(home, "owned") + " is outside the agent's sandbox",
		"TCP port " + strconv.Itoa(leakPort) + " is outside the agent's sandbox",
		"TCP port " + strconv.Itoa(d.Port) + " is outside the agent's sandbox",
		"TCP port " + modelPort + " is outside the agent's sandbox",
	} {
		if body := results(i + 1); !strings.Contains(body, "Permission denied") || !strings.Contains(body, want) {
			t.Errorf("tool result %d lacks the refusal and %q:\n%s", i+1, want, body)
		}
	}
	all := ""
	for i := range reqs {
		all += results(i)
	}
	for what, leak := range map[string]string{"the admin token": d.Token, "the planted key": "PLANTED-KEY", "a local port": canary, "the model's port": "REACHED-42"} {
		if strings.Contains(all, leak) {
			t.Errorf("a tool command reached %s", what)
		}
	}
	if !strings.Contains(results(7), "mine") {
		t.Errorf("run_shell could not work in the agent's directory:\n%s", results(7))
	}
	if _, err := os.Stat(filepath.Join(home, "owned")); err == nil {
		t.Error("a tool command wrote into the daemon's home")
	}
	if out := c.ok("peek"); !strings.Contains(out, "dora posts from the sandbox") {
		t.Errorf("the channel lacks dora's post:\n%s", out)
	}
	logs := c.ok("logs", c.agent("dora").Runs[0].ID)
	if n := strings.Count(logs, "is outside the agent's sandbox"); n < 6 {
		t.Errorf("the transcript shows %d sandbox lines, want 6:\n%s", n, logs)
	}
}

// A bad sandbox setting is refused with what to write, from the CLI and
// from a workflow file (with its line); a good one reaches the agent with
// its paths made absolute (issue 26).
func TestE2ESandboxConfigErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for cfg, want := range map[string]string{
		`{"sandbox": {"read": ["data/sets"]}}`:  `path "data/sets" is not absolute`,
		`{"sandbox": {"reed": ["/data"]}}`:      `unknown field "reed"`,
		`{"sandbox": {"network": "sometimes"}}`: `write none, all or a list of TCP ports`,
		`{"sandbox": {"network": [70000]}}`:     `70000 is not a TCP port`,
		`{"sandbox": {"mode": "maybe"}}`:        `"maybe": write on or off`,
	} {
		r := c.run("new", "bad", "--backend", "mock", "--config", cfg)
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("new --config %s: exit %d, stderr %q; want it refused saying %q", cfg, r.code, r.stderr, want)
		}
	}
	c.ok("new", "good", "--backend", "mock", "--config", `{"sandbox": {"read": ["~/data/sets"], "write": ["/tmp/out/../out2"], "network": [8080]}}`)
	a := c.agent("good")
	if s := a.Config.Sandbox; s == nil || !slices.Equal(s.Read, []string{filepath.Join(c.home, "data", "sets")}) || !slices.Equal(s.Write, []string{"/tmp/out2"}) ||
		s.Network == nil || !slices.Equal(s.Network.Ports, []uint16{8080}) {
		t.Errorf("the agent's sandbox = %+v", a.Config.Sandbox)
	}

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "team.yaml"), `name: team
agents:
  a:
    backend: mock
    sandbox: {read: [./data], network: lots}
`)
	r := c.run("start", filepath.Join(dir, "team.yaml"), "--background")
	if r.code == 0 || !strings.Contains(r.stderr, "team.yaml:5:") || !strings.Contains(r.stderr, "network") {
		t.Errorf("start with a bad sandbox: exit %d, stderr %q; want file:line and the key", r.code, r.stderr)
	}
}

// What a run starts ends with it, even a child that leaves the run's
// process group and session (setsid), and after a SIGKILL of the daemon
// the next daemon kills what the runs left (issue 27, item 5). Status
// says how.
func TestE2ESessionLeaversEndWithTheRun(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	// Its daemons in a cgroup of their own: another test's daemon that
	// starts while this one lies killed would otherwise end the escaped
	// child first (every daemon sweeps what gone daemons of its cgroup
	// left), and there would be nothing left for the next daemon to end.
	c.daemonAttr = privateCgroup(t)
	daemon := c.startDaemon()
	if c.daemonAttr != nil {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", daemon.Process.Pid)); err != nil || !strings.Contains(string(b), "/agent-worker-test-") {
			t.Fatalf("the daemon is not in the test's private cgroup: %s %v", b, err)
		}
	}
	status := c.ok("status")
	if !strings.Contains(status, "processes: cgroup v2: each plugin process in a cgroup of its own") {
		if strings.Contains(status, "processes: subreaper: no cgroup v2 here") {
			t.Skipf("this machine gives the daemon no cgroup v2, and status says so:\n%s", status)
		}
		t.Fatalf("status does not say how a run's processes end:\n%s", status)
	}
	// setsid, not a group leader, makes the session itself and execs: $!
	// is the escaped child, written before the step (and the run) ends.
	escape := `setsid sh -c 'exec sleep 300' </dev/null >/dev/null 2>&1 & echo $! > escaped.pid`
	cfg, _ := json.Marshal(map[string]any{"script": []map[string]any{{"shell": escape}, {"result": "left a child"}}})
	c.ok("new", "leaver", "--backend", "mock", "--config", string(cfg))
	home := realPath(t, c.home)
	pidFile := filepath.Join(home, "workspaces", "global", "main", "leaver", "escaped.pid")
	escaped := func() int {
		b, _ := os.ReadFile(pidFile)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return pid
	}
	gone := func(pid int) bool { return processGone(pid) }

	c.ok("ask", "leaver", "go")
	pid := escaped()
	if pid == 0 {
		t.Fatal("the run left no pid of its escaped child")
	}
	c.waitFor(fmt.Sprintf("the escaped child %d to end with its run", pid), func() bool { return gone(pid) })

	// A daemon killed mid-run: its plugin dies with it (Pdeathsig), the
	// child in a session of its own does not, until the next daemon.
	os.Remove(pidFile)
	cfg, _ = json.Marshal(map[string]any{"script": []map[string]any{{"shell": escape}, {"hang": true}}})
	c.ok("new", "hanger", "--backend", "mock", "--config", string(cfg))
	c.ok("send", "hanger", "go")
	pidFile = filepath.Join(home, "workspaces", "global", "main", "hanger", "escaped.pid")
	c.waitFor("the hanging run's escaped child", func() bool { return escaped() != 0 })
	pid = escaped()
	c.waitEscaped(pid)
	if err := daemon.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait() // reaped, as a shell would: its pid is free
	if gone(pid) {
		// Nothing is left, which is what a user needs; but what ended it
		// was not the next daemon (a sweep of another daemon in the
		// machine's cgroup tree raced it), so this run shows only that.
		t.Logf("the escaped child %d ended with the killed daemon, before the next daemon could show it ends it", pid)
	}
	c.startDaemon()
	c.waitFor(fmt.Sprintf("the next daemon to kill the escaped child %d", pid), func() bool { return gone(pid) })

	// The hanging run starts again under the new daemon and leaves another
	// child; stop --all ends it with the daemon.
	c.waitFor("the new run's escaped child", func() bool { p := escaped(); return p != 0 && p != pid && !gone(p) })
	pid = escaped()
	c.ok("stop", "--all")
	c.waitFor(fmt.Sprintf("stop --all to end the escaped child %d", pid), func() bool { return gone(pid) })
}
