package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

func statusCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	e.common(fs)
	return leaf("status", "status [--json]", "show the daemon, agents, workflows and problems", fs, [2]int{0, 0},
		func(ctx context.Context, _ []string) error {
			c, err := e.connect(ctx, false)
			if err == errNotRunning {
				if e.json {
					return e.printJSON(map[string]any{"running": false})
				}
				e.printf("daemon: not running (home %s)\n", e.home)
				return nil
			}
			if err != nil {
				return err
			}
			h, err := c.Health(ctx)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(struct {
					Running bool `json:"running"`
					api.Health
				}{true, h})
			}
			up := time.Duration(h.UptimeMS) * time.Millisecond
			scheme := "http://"
			if h.TLS != nil {
				scheme = "https://"
			}
			e.printf("daemon:    running, pid %d, %s%s, up %s, %s\n", h.PID, scheme, h.Listen, up.Round(time.Second), h.Version)
			if f := h.ListenFallback; f != nil {
				e.printf("listen:    %s, not the default %s: that was in use by %s when the daemon started\n", h.Listen, f.Default, f.HeldBy)
			}
			if h.TLS != nil {
				e.printf("tls:       %s\n", tlsLine(h.TLS))
			}
			e.printf("home:      %s\n", h.Home)
			e.printf("agents:    %d\n", h.Counts.Agents)
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			for _, a := range h.Agents {
				state := string(a.State)
				if a.Session != nil {
					state += " (Claude Code in " + a.Session.Cwd + ")"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", a.Target, backendModel(a), state, spendText(a.Spend))
			}
			tw.Flush()
			e.printf("workflows: %d\n", len(h.Workflows))
			for _, w := range h.Workflows {
				e.printf("  %s (%s) → %s\n", w.Target, w.State, orNone(strings.Join(w.Agents, ", ")))
				if w.Spend != nil && w.Spend.Runs > 0 {
					e.printf("    spent: %s\n", spendText(w.Spend))
				}
			}
			var names []string
			for _, p := range h.Plugins {
				if p.Error == "" && !p.Shadowed {
					names = append(names, p.Kind+" "+p.Name)
				}
			}
			e.printf("plugins:   %s\n", orNone(strings.Join(names, ", ")))
			e.printf("store:     %s\n", storeLine(h.Store))
			e.printf("sandbox:   %s\n", h.Sandbox)
			e.printf("processes: %s: %s\n", h.Processes.Mechanism, h.Processes.Detail)
			if h.Processes.Limits != "" {
				e.printf("limits:    %s\n", h.Processes.Limits)
			}
			if c := h.Cluster; c != nil {
				e.printf("cluster:   %d member(s); this is %s\n", len(c.Members), c.Member)
				for _, m := range c.Members {
					state := "alive"
					switch {
					case m.StoppedAt != nil:
						state = "stopped " + m.StoppedAt.Local().Format(time.TimeOnly)
					case !m.Alive:
						state = "not responding"
					}
					age := time.Duration(m.HeartbeatAgeMS) * time.Millisecond
					fmt.Fprintf(tw, "  %s\t%s\t%s\tpid %d\t%s\theartbeat %s ago\n", m.ID, m.Host, memberURL(m.Address), m.PID, state, age.Round(100*time.Millisecond))
				}
				tw.Flush()
			}
			if len(h.Workers) > 0 {
				e.printf("running:   %d\n", len(h.Workers))
				for _, w := range h.Workers {
					age := time.Duration(w.HeartbeatAgeMS) * time.Millisecond
					fmt.Fprintf(tw, "  %s\t%s\t%s\tpid %d\theartbeat %s ago\n", w.Agent, w.Backend, w.Run, w.PID, age.Round(time.Second))
				}
				tw.Flush()
			}
			if len(h.Problems) > 0 {
				e.printf("problems:\n")
				for _, p := range h.Problems {
					e.printf("  %s\n", p)
				}
			}
			return nil
		})
}

// tlsLine is status's account of the API's certificate: the fingerprint
// a client on another machine pins.
func tlsLine(t *api.TLSInfo) string {
	kind := "certificate " + t.CertFile
	if t.SelfSigned {
		kind = "self-signed (--tls auto), " + t.CertFile
	}
	return "sha256 " + t.Fingerprint + ", " + kind + ", expires " + t.NotAfter.Local().Format(time.DateOnly)
}

// memberURL is a cluster member's address as a URL: members with TLS
// publish one, the others host:port.
func memberURL(addr string) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	return "http://" + addr
}

// storeLine is status's one-line account of the database file.
func storeLine(s api.StoreHealth) string {
	switch {
	case s.CorruptSince != nil:
		return "CORRUPT (" + s.Corrupt + ", since " + s.CorruptSince.Local().Format(time.DateTime) + "): stop the daemon and restore a backup (see `agent-worker backup --help`)"
	case s.UnreachableSince != nil:
		return "UNREACHABLE (" + s.LastError + ", since " + s.UnreachableSince.Local().Format(time.DateTime) + ")"
	case !s.Linked:
		return "DELETED OR REPLACED (" + s.Path + "): restart the daemon"
	case s.Failing:
		return "WRITES FAILING: " + s.LastError
	case s.LastErrorAt != nil:
		return "ok (last write error at " + s.LastErrorAt.Local().Format(time.DateTime) + ": " + s.LastError + ")"
	}
	return "ok"
}

func newCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("new", flag.ContinueOnError)
	e.common(fs)
	var spec api.AgentSpec
	var systemFile, config string
	fs.StringVar(&spec.Model, "model", "", "model, e.g. openai/gpt-4o (sdk default: the daemon's --default-model, anthropic/claude-sonnet-4-5)")
	fs.StringVar(&spec.Backend, "backend", "", "sdk (the default), claude, codex, cursor, acp (or its presets gemini, claude-acp, codex-acp, opencode), mock or external")
	fs.StringVar(&spec.System, "system", "", "system prompt")
	fs.StringVar(&systemFile, "system-file", "", "read the system prompt from this file")
	fs.StringVar(&spec.Workflow, "workflow", "", "workflow the agent belongs to (default global)")
	fs.StringVar(&spec.Tag, "tag", "", "tag of the workflow instance (default main)")
	fs.StringVar(&spec.Schedule, "schedule", "", `wake the agent every interval (30s, 5m), on a cron ("0 9 * * 1-5") or @daily`)
	fs.StringVar(&spec.WakeupPrompt, "wakeup-prompt", "", "message a scheduled wake-up sends (needs --schedule)")
	fs.StringVar(&config, "config", "", `backend-specific settings as a JSON object, e.g. '{"script":[{"reply":"hi"}]}' for mock`)
	fs.Func("role", "a role that routes tasks to the agent (tasks add --role R); repeat for several", func(s string) error {
		spec.Roles = append(spec.Roles, s)
		return nil
	})
	return leaf("new", "new <name> [--backend B] [--model M] [--system TEXT | --system-file F] [--workflow W --tag T] [--schedule S] [--role R]...",
		"register an agent (no flags: backend sdk with the daemon's default model)", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			t, err := parseAgentTarget(args[0])
			if err != nil {
				return err
			}
			if err := mergeScope(&spec, t); err != nil {
				return err
			}
			if systemFile != "" {
				if spec.System != "" {
					return usagef("give --system or --system-file, not both")
				}
				if spec.System, err = api.ReadSystemPromptFile(systemFile); err != nil {
					return usagef("read --system-file: %v", err)
				}
			}
			if config != "" {
				if spec.Config, err = backend.ParseAgentConfig([]byte(config)); err != nil {
					return usagef("--config: %v", err)
				}
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			a, err := c.CreateAgent(ctx, spec)
			if err != nil {
				return err
			}
			for _, w := range a.Warnings {
				fmt.Fprintf(e.stderr, "agent-worker: warning: %s\n", w)
			}
			if e.json {
				return e.printJSON(a)
			}
			e.printf("%s (%s)\n", a.Target, backendModel(a))
			return nil
		})
}

// mergeScope lets `new alice@review:pr-1` and `new alice --workflow review
// --tag pr-1` mean the same, and refuses the two when they disagree.
func mergeScope(spec *api.AgentSpec, t api.Target) error {
	spec.Name = t.Agent
	for _, p := range []struct {
		flag, fromTarget string
		v                *string
	}{
		{"workflow", t.Workflow, &spec.Workflow}, {"tag", t.Tag, &spec.Tag},
	} {
		def := api.GlobalWorkflow
		if p.flag == "tag" {
			def = api.DefaultTag
		}
		switch {
		case *p.v == "":
			*p.v = p.fromTarget
		case p.fromTarget != def && p.fromTarget != *p.v:
			return usagef("the target says %s %q but --%s says %q", p.flag, p.fromTarget, p.flag, *p.v)
		}
	}
	return nil
}

func listCmd(e *env, name string) *ffcli.Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	e.common(fs)
	help := "list agents"
	if name == "ls" {
		help = "list agents (same as list)"
	}
	return leaf(name, name+" [--json]", help, fs, [2]int{0, 0},
		func(ctx context.Context, _ []string) error {
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			agents, err := c.ListAgents(ctx)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.AgentList{Agents: agents})
			}
			if len(agents) == 0 {
				e.printf("no agents: create one with `agent-worker new <name> --backend mock`\n")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tBACKEND/MODEL\tSTATE\tWORKFLOW")
			for _, a := range agents {
				name := a.Name
				if a.SpawnedBy != "" {
					name += " (spawned by " + a.SpawnedBy + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, backendModel(a), a.State, api.Target{Workflow: a.Workflow, Tag: a.Tag}.Display())
			}
			return tw.Flush()
		})
}

func infoCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("info", flag.ContinueOnError)
	e.common(fs)
	return leaf("info", "info <target> [--json]", "show an agent or a workflow", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			if t.IsScope() {
				w, err := c.GetWorkflow(ctx, t)
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(w)
				}
				e.printf("workflow: %s\nstate:    %s\nagents:   %s\n", w.Target, w.State, orNone(strings.Join(w.Agents, ", ")))
				if w.SourcePath != "" {
					e.printf("file:     %s\n", w.SourcePath)
				}
				if w.Error != "" {
					e.printf("error:    %s\n", w.Error)
				}
				if w.Spend != nil {
					e.printf("spent:    %s (all runs, ever)\n", spendText(w.Spend))
				}
				if p := w.Progress; p != nil {
					state := "working"
					if p.Idle {
						state = "idle"
					}
					e.printf("team:     %s; %d run(s), %d failed; %d tokens in / %d out, $%.4f%s\n",
						state, p.Runs, p.FailedRuns, p.InputTokens, p.OutputTokens, p.CostUSD, unpricedText(p.UnpricedRuns))
					if len(p.Failed) > 0 {
						e.printf("failed:   %s (agent-worker resume <agent>)\n", strings.Join(p.Failed, ", "))
					}
				}
				return nil
			}
			a, err := c.GetAgent(ctx, t)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(a)
			}
			return e.printAgent(a)
		})
}

// printAgent is `info <agent>` as text: the agent's whole config (env by
// names only), its state and warnings, and its last runs.
func (e *env) printAgent(a api.Agent) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 1, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("agent", a.Target)
	row("workflow", strings.TrimPrefix(api.Target{Workflow: a.Workflow, Tag: a.Tag}.String(), "@"))
	row("backend", a.Backend)
	row("model", a.Model)
	row("state", string(a.State))
	if s := a.Session; s != nil {
		row("session", sessionText(*s))
	}
	row("spawned by", a.SpawnedBy)
	row("roles", strings.Join(a.Roles, ", "))
	if a.CanSpawn {
		row("can spawn", fmt.Sprintf("up to %d live agents (agent_spawn, agent_stop)", a.MaxSpawned))
	}
	row("task", a.Task)
	row("error", a.Error)
	for _, w := range a.Warnings {
		row("warning", w)
	}
	row("inbox", fmt.Sprintf("%d unread", a.InboxDepth))
	row("spent", spendText(a.Spend))
	row("schedule", a.Schedule)
	row("wakeup", a.WakeupPrompt)
	row("system", firstLine(a.System, 100))
	for _, kv := range configRows(a.Config) {
		row(kv[0], kv[1])
	}
	row("created", a.CreatedAt.Local().Format(time.DateTime))
	if len(a.Runs) > 0 {
		r := a.Runs[0]
		row("last run", fmt.Sprintf("%s %s, %s, %s", r.ID, r.State, r.StartedAt.Local().Format(time.DateTime),
			(time.Duration(r.DurationMS)*time.Millisecond).Round(time.Millisecond)))
	}
	for _, r := range a.Runs {
		if r.Error != "" {
			row("last error", fmt.Sprintf("%s (run %s, %s)", api.OneLine(r.Error, 200), r.ID, r.StartedAt.Local().Format(time.DateTime)))
			break
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(a.Runs) == 0 {
		return nil
	}
	e.printf("last runs:\n")
	tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, r := range a.Runs {
		outcome := string(r.State)
		if r.Error != "" {
			outcome += ": " + api.OneLine(r.Error, 80)
		}
		fmt.Fprintf(tw, "  %s\t%s\tattempt %d\t%s\t%d/%d tokens\t%s\t%s\n", r.StartedAt.Local().Format(time.DateTime), r.ID,
			r.Attempt, (time.Duration(r.DurationMS) * time.Millisecond).Round(time.Millisecond), r.InputTokens, r.OutputTokens, costText(r), outcome)
	}
	return tw.Flush()
}

// configRows shows an agent's config for reading: tools and MCP servers by
// name, env by variable names only (values are often secrets), the rest
// as compact JSON.
func configRows(cfg backend.AgentConfig) [][2]string {
	var rows [][2]string
	if cfg.Tools != nil {
		rows = append(rows, [2]string{"tools", orNone(strings.Join(cfg.Tools, ", "))})
	}
	if len(cfg.Env) > 0 {
		rows = append(rows, [2]string{"env", strings.Join(slices.Sorted(maps.Keys(cfg.Env)), ", ")})
	}
	if len(cfg.MCPServers) > 0 {
		rows = append(rows, [2]string{"mcp servers", strings.Join(slices.Sorted(maps.Keys(cfg.MCPServers)), ", ")})
	}
	rest := cfg
	rest.Tools, rest.Env, rest.MCPServers = nil, nil, nil
	if !rest.IsZero() {
		b, _ := json.Marshal(rest)
		rows = append(rows, [2]string{"config", api.OneLine(string(b), 100)})
	}
	return rows
}

// firstLine is the first non-empty line of s, cut to max runes, saying how
// many lines follow.
func firstLine(s string, max int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	first := api.OneLine(lines[0], max)
	if n := len(lines) - 1; n > 0 {
		first += fmt.Sprintf(" (+%d more lines)", n)
	}
	return first
}

func stopCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("stop", flag.ContinueOnError)
	e.common(fs)
	all := fs.Bool("all", false, "stop the daemon itself")
	return leaf("stop", "stop <target> | stop --all", "remove an agent, stop a workflow (@wf:tag), or --all to stop the daemon", fs, [2]int{0, 1},
		func(ctx context.Context, args []string) error {
			if *all {
				if len(args) > 0 {
					return usagef("give a target or --all, not both")
				}
				return e.stopDaemon(ctx)
			}
			if len(args) == 0 {
				return usagef("usage: agent-worker stop <target> | stop --all")
			}
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			if t.IsScope() {
				err = c.StopWorkflow(ctx, t, false)
			} else {
				err = c.DeleteAgent(ctx, t)
			}
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.Status{Status: "stopped", Target: t.Display()})
			}
			e.printf("stopped: %s\n", t.Display())
			return nil
		})
}

// stopDaemon asks the daemon to shut down and waits until its process is
// gone, so a following `agent-worker daemon` does not race its lock.
func (e *env) stopDaemon(ctx context.Context) error {
	c, err := e.connect(ctx, false)
	if err == errNotRunning {
		if e.json {
			return e.printJSON(api.Status{Status: "not running"})
		}
		e.printf("daemon: not running\n")
		return nil
	}
	if err != nil {
		return err
	}
	d, err := api.ReadDaemonInfo(e.home)
	if err != nil {
		return err
	}
	if err := c.Shutdown(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for api.ProcessAlive(d.PID) {
		if time.Now().After(deadline) {
			return fmt.Errorf("daemon pid %d is still running 15s after shutdown: check %s/logs/daemon.log", d.PID, e.home)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	if e.json {
		return e.printJSON(api.Status{Status: "stopped"})
	}
	e.printf("daemon stopped (pid %d)\n", d.PID)
	return nil
}

func backendModel(a api.Agent) string {
	if a.Model == "" {
		return a.Backend
	}
	return a.Backend + "/" + a.Model
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func resetCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("reset", flag.ContinueOnError)
	e.common(fs)
	return leaf("reset", "reset <agent>", "forget the agent's conversation (sdk memory, CLI sessions): its next run starts fresh", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			t, c, err := e.agentClient(ctx, args[0])
			if err != nil {
				return err
			}
			res, err := c.Reset(ctx, t)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(res)
			}
			if res.Forgotten == 0 {
				e.printf("reset: %s had no conversation to forget\n", res.Target)
				return nil
			}
			e.printf("reset: %s forgot its conversation; its next run starts fresh\n", res.Target)
			return nil
		})
}

func scheduleCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("schedule", flag.ContinueOnError)
	e.common(fs)
	prompt := fs.String("prompt", "", "the message a scheduled wake-up sends (default: a generic check-in)")
	return leaf("schedule", `schedule <agent> set <30m | "cron expr"> [--prompt TEXT] | schedule <agent> clear`,
		"wake an agent on an interval (after that long idle), a 5-field cron (day-of-week 0 and 7 are Sunday) or @hourly/@daily/@weekly", fs, [2]int{2, 3},
		func(ctx context.Context, args []string) error {
			switch {
			case args[1] == "set" && len(args) == 3:
			case args[1] == "clear" && len(args) == 2:
			default:
				return usagef(`usage: agent-worker schedule <agent> set <30m | "cron expr"> | schedule <agent> clear`)
			}
			t, c, err := e.agentClient(ctx, args[0])
			if err != nil {
				return err
			}
			if args[1] == "clear" {
				err = c.ClearSchedule(ctx, t)
			} else {
				err = c.SetSchedule(ctx, t, api.ScheduleRequest{Schedule: args[2], WakeupPrompt: *prompt})
			}
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.Status{Status: args[1], Target: t.Display()})
			}
			if args[1] == "clear" {
				e.printf("%s: no schedule\n", t.Display())
			} else {
				e.printf("%s: wakes on %s\n", t.Display(), args[2])
			}
			return nil
		})
}
