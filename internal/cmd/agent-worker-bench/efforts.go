package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/host/gate"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

// benchSkill has ten phases with nothing to prove, so that a walk is
// effort_continue after effort_continue; the first phase denies Write,
// so that the gate has a rule to read.
var benchSkill = func() string {
	var b strings.Builder
	b.WriteString("---\nname: bench\ndescription: ten phases with nothing to prove, for the bench\nphases:\n")
	for i := range 10 {
		fmt.Fprintf(&b, "  - name: p%d\n    instructions: Go on.\n", i+1)
		if i == 0 {
			b.WriteString("    tools:\n      deny: [Write, write_file]\n")
		}
	}
	b.WriteString("---\n# Bench\n")
	return b.String()
}()

// effortRows: effort_continue's MCP round trip on a fresh daemon beside a
// one-write tool call on the same session, the gate: its HTTP round trip
// beside an empty one, the status line process beside a bare one, and the
// gate's in-process decision beside the store read it makes.
func (b *bench) effortRows(ctx context.Context) error {
	n := b.n(2_000, 500)
	step("effort_continue, one outside agent walking efforts of ten phases, a fresh daemon")
	home, err := tempHome(b.cfg, "efforts")
	if err != nil {
		return err
	}
	skills := filepath.Join(home, ".agent-worker", "skills", "bench") // the user's skills, HOME being home
	if err := os.MkdirAll(skills, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(skills, "SKILL.md"), []byte(benchSkill), 0o644); err != nil {
		return err
	}
	d, err := startDaemonEnv(ctx, b.cfg, home, []string{"HOME=" + home}, b.cfg.sparesOff...)
	if err != nil {
		return err
	}
	defer d.stop(ctx)
	url, tokens, err := externalAgents(ctx, d.client, "global", "e", 1)
	if err != nil {
		return err
	}
	s, err := goSession(ctx, url, tokens[0])
	if err != nil {
		return err
	}
	defer s.Close()
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	call := func(name string, args map[string]any) (tools.EffortResult, time.Duration, error) {
		t0 := time.Now()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		took := time.Since(t0)
		var out tools.EffortResult
		if err == nil && res.IsError {
			err = fmt.Errorf("%s: %v", name, text(res))
		}
		if err == nil && strings.HasPrefix(name, "effort_") {
			raw, _ := json.Marshal(res.StructuredContent)
			if jerr := json.Unmarshal(raw, &out); jerr != nil || (out.Token == "" && name != tools.EffortContinue) {
				if jerr = json.Unmarshal([]byte(text(res)), &out); jerr != nil {
					err = fmt.Errorf("%s: no token in %s", name, text(res))
				}
			}
		}
		return out, took, err
	}
	// walk makes count continues (and the starts they need, untimed),
	// after a warm-up of 100.
	walk := func(count int) ([]time.Duration, error) {
		var lat []time.Duration
		token := ""
		for len(lat) < count {
			if token == "" {
				r, _, err := call(tools.EffortStart, map[string]any{"dir": work, "skill": "bench"})
				if err != nil {
					return nil, err
				}
				token = r.Token
			}
			r, took, err := call(tools.EffortContinue, map[string]any{"token": token})
			if err != nil {
				return nil, err
			}
			lat = append(lat, took)
			token = r.Token // "" once the last phase finished the effort
			if r.State != "" && r.State != "active" {
				token = ""
			}
		}
		return lat, nil
	}
	if _, err := walk(100); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	cont, err := walk(n)
	if err != nil {
		return err
	}
	var bare []time.Duration
	for i := range n + 100 {
		_, took, err := call(tools.MyStatusSet, map[string]any{"state": fmt.Sprintf("bench %d", i)})
		if err != nil {
			return err
		}
		if i >= 100 {
			bare = append(bare, took)
		}
	}
	cp50, cp99 := percentiles(cont)
	bp50, bp99 := percentiles(bare)
	b.t.add(row{what: "`effort_continue`, MCP round trip", ours: latText(cp50, cp99),
		ceiling: "`my_status_set` (one write) on the same session: " + latText(bp50, bp99),
		ts:      b.cannot("no efforts"), goal: "p99 ≤ 5 ms",
		method: fmt.Sprintf("One outside agent on a fresh daemon and home, one go-sdk MCP session, one call at a time: it walks efforts of a ten-phase skill with nothing to prove "+
			"(effort_start untimed, then effort_continue with the token each answer gives; the tenth finishes the effort and writes its debrief), "+
			"%d continues timed after 100 of warm-up. Ceiling: %[1]d `my_status_set` calls (one store write each) on the same session right after.", n)})

	// The gate over HTTP: the plugins' POST <mcp url>/gate, with an
	// effort active in its first phase, beside an empty HTTP round trip.
	if _, _, err := call(tools.EffortStart, map[string]any{"dir": work, "skill": "bench"}); err != nil {
		return err
	}
	body, _ := json.Marshal(tools.GateCall{Tool: "Write", Path: filepath.Join(work, "main.go")})
	client := &http.Client{Transport: bearerTransport{tokens[0], newTransport()}}
	gateURL := strings.TrimSuffix(url, "/") + tools.GatePath
	post := func(u string) (time.Duration, error) {
		t0 := time.Now()
		resp, err := client.Post(u, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%s: %s: %s", u, resp.Status, b)
		}
		return time.Since(t0), nil
	}
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"allowed":true}`)
	}))
	defer empty.Close()
	gn := b.n(5_000, 500)
	gateLat, emptyLat, err := alternate(gn, 200, func() (time.Duration, error) {
		took, err := post(gateURL)
		if err != nil {
			return 0, fmt.Errorf("gate: %w", err)
		}
		return took, nil
	}, func() (time.Duration, error) { return post(empty.URL) })
	if err != nil {
		return err
	}
	gp50, gp99 := percentiles(gateLat)
	ep50, ep99 := percentiles(emptyLat)
	b.t.add(row{what: "the gate, `POST <mcp url>/gate` round trip (a plugin's question before a tool call)", ours: us(gp50, gp99),
		ceiling: "an empty HTTP round trip (a bare `net/http` server in the bench): " + us(ep50, ep99),
		ts:      b.cannot("no gates"), goal: "≤ 0.1 ms over the ceiling",
		method: fmt.Sprintf("The same daemon and agent, an effort active in its first phase (which denies Write): %d gate requests for a Write, one at a time on a kept-alive connection "+
			"with the run's kind of bearer token, after 200 of warm-up; alternating with the same request to a bare `net/http` server in the bench's own process answering a fixed decision.", gn)})

	if err := b.statusLineRow(ctx, home, "e0@global:main"); err != nil {
		return err
	}
	return b.gateDecisionRow(ctx)
}

// statusLineRow: `agent-worker statusline`, the command Claude Code runs
// after every turn of a session `hooks install` set up, as the whole
// process it is, against the running daemon of home where agent has an
// effort in phase 1 of benchSkill, beside a process that asks nothing.
func (b *bench) statusLineRow(ctx context.Context, home, agent string) error {
	step("the status line, a whole process against the same daemon")
	run := func(args ...string) (string, time.Duration, error) {
		cmd := exec.CommandContext(ctx, b.cfg.bin, args...)
		cmd.Env = append(os.Environ(), "AGENT_WORKER_HOME="+home)
		cmd.Stdin = strings.NewReader("{}") // Claude Code gives it the session as JSON
		t0 := time.Now()
		out, err := cmd.Output()
		return string(out), time.Since(t0), err
	}
	n := b.n(500, 50)
	line, bare, err := alternate(n, 20, func() (time.Duration, error) {
		out, took, err := run("statusline", "--agent", agent)
		if err != nil || !strings.Contains(out, "bench:P1]") {
			return 0, fmt.Errorf("statusline: %v, printed %q; want the effort's phase", err, out)
		}
		return took, nil
	}, func() (time.Duration, error) {
		_, took, err := run("version")
		if err != nil {
			return 0, fmt.Errorf("version: %w", err)
		}
		return took, nil
	})
	if err != nil {
		return err
	}
	lp50, lp99 := percentiles(line)
	vp50, vp99 := percentiles(bare)
	b.t.add(row{what: "the status line, `agent-worker statusline --agent A` as Claude Code runs it after every turn (a whole process)", ours: latText(lp50, lp99),
		ceiling: "`agent-worker version`, a process that asks the daemon nothing: " + latText(vp50, vp99),
		ts:      b.cannot("no status line"), goal: "p99 ≤ 20 ms (Claude Code's status line budget)",
		method: fmt.Sprintf("The same daemon, agent and effort (in its first phase): %d runs of the binary's `statusline --agent %s` with `{}` on stdin, one at a time after 20 of warm-up, "+
			"each checked to print the effort's phase; alternating with `agent-worker version`, the process's start and exit alone, the ceiling.", n, agent)})
	return nil
}

// gateDecisionRow: the gate's decision in process (host/gate.Decide) on a
// fresh store, beside the store read it makes (the agent's active effort).
func (b *bench) gateDecisionRow(ctx context.Context) error {
	step("the gate's decision in process, a fresh store")
	db, err := store.Open(ctx, filepath.Join(b.cfg.work, "gate.db"), store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	k := store.AgentKey{Name: "alice", Workflow: "global", Tag: "main"}
	if _, err := db.CreateAgent(ctx, store.Agent{Name: k.Name, Workflow: k.Workflow, Tag: k.Tag, Backend: "mock"}); err != nil {
		return err
	}
	s, err := skill.Parse("", []byte(benchSkill))
	if err != nil {
		return err
	}
	dir := filepath.Join(b.cfg.work, "gate-work")
	if _, _, err := db.StartEffort(ctx, store.NewEffort{Agent: k, Dir: dir, Skill: s.Name,
		Snapshot: skill.Snapshot("bench/SKILL.md", []byte(benchSkill)), Phases: s.PhaseNames(), Mode: "solo", Nonce: "n0"}); err != nil {
		return err
	}
	g := gate.New(db, nil)
	call := skill.Call{Tool: "Write", Path: filepath.Join(dir, "main.go")}
	n := b.n(50_000, 2_000)
	var decide, read []time.Duration
	for i := range n + 1_000 {
		t0 := time.Now()
		d, err := g.Decide(ctx, k, call)
		t1 := time.Now()
		if err != nil || d.Allowed {
			return fmt.Errorf("decide: %v, %+v; want a refusal", err, d)
		}
		if _, _, err := db.ActiveEffort(ctx, k); err != nil {
			return err
		}
		t2 := time.Now()
		if i >= 1_000 {
			decide, read = append(decide, t1.Sub(t0)), append(read, t2.Sub(t1))
		}
	}
	dp50, dp99 := percentiles(decide)
	rp50, rp99 := percentiles(read)
	b.t.add(row{what: "the gate's decision in process (`host/gate` Decide, what each gated call adds in the daemon)", ours: us(dp50, dp99),
		ceiling: "the store read it makes (the agent's active effort): " + us(rp50, rp99),
		ts:      b.cannot("no gates"), goal: "≤ 0.1 ms",
		method: fmt.Sprintf("In the bench's process on a fresh store file: one agent with an effort active in a phase that denies Write; %d decisions on a Write, one at a time, after 1,000 of warm-up, "+
			"each followed by the same `ActiveEffort` read alone, the ceiling.", n)})
	return nil
}

// alternate times a, then b, n times after warm untimed rounds of both,
// so that the machine's drift falls on both alike.
func alternate(n, warm int, a, b func() (time.Duration, error)) (aLat, bLat []time.Duration, err error) {
	for i := range n + warm {
		ta, err := a()
		if err != nil {
			return nil, nil, err
		}
		tb, err := b()
		if err != nil {
			return nil, nil, err
		}
		if i >= warm {
			aLat, bLat = append(aLat, ta), append(bLat, tb)
		}
	}
	return aLat, bLat, nil
}

// us is latText to the microsecond, for rows well under a millisecond.
func us(p50, p99 time.Duration) string {
	return fmt.Sprintf("p50 %.3f ms, p99 %.3f ms", float64(p50.Nanoseconds())/1e6, float64(p99.Nanoseconds())/1e6)
}

// text is a tool result's text content.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
