package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

func runsCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("runs", flag.ContinueOnError)
	e.common(fs)
	n := fs.Int("n", 20, "how many runs, newest first")
	failed := fs.Bool("failed", false, "only runs that failed, were cancelled or timed out")
	cmd := leaf("runs", "runs [agent | @wf[:tag]] [-n N] [--failed] [--json]",
		"list runs, newest first: agent, workflow, backend, state, start, duration, tokens, cost", fs, [2]int{0, 1},
		func(ctx context.Context, args []string) error {
			q := api.RunQuery{Limit: *n, Failed: *failed}
			if len(args) == 1 {
				if _, err := parseTarget(args[0]); err != nil {
					return err
				}
				q.Target = args[0]
			}
			if *n < 1 || *n > 1000 {
				return usagef("-n must be between 1 and 1000")
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			runs, err := c.Runs(ctx, q)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.RunList{Runs: runs})
			}
			if len(runs) == 0 {
				e.printf("no runs\n")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tAGENT\tWORKFLOW\tBACKEND\tSTATE\tSTARTED\tDURATION\tTOKENS IN/OUT\tCOST")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", r.ID, agentName(r.Agent), r.Scope, r.Backend, r.State,
					r.StartedAt.Local().Format(time.DateTime), runDuration(r), r.InputTokens, r.OutputTokens, costText(r))
			}
			return tw.Flush()
		})
	cmd.Subcommands = []*ffcli.Command{runsReplayCmd(e)}
	return cmd
}

// agentName is the agent part of a run's agent target.
func agentName(target string) string {
	if t, err := api.ParseAgentTarget(target); err == nil {
		return t.Agent
	}
	return target
}

func runDuration(r api.Run) string {
	if r.EndedAt == nil {
		return "running"
	}
	return (time.Duration(r.DurationMS) * time.Millisecond).Round(time.Millisecond).String()
}

// costText is a run's cost as people read it: dollars, "cost unknown" for
// tokens the daemon has no price for, "-" while it runs or when it used
// nothing.
func costText(r api.Run) string {
	switch {
	case r.CostUSD == nil && r.EndedAt == nil:
		return "-"
	case r.CostUSD == nil:
		return "cost unknown"
	case *r.CostUSD == 0 && r.InputTokens == 0 && r.OutputTokens == 0:
		return "-"
	}
	return fmt.Sprintf("$%.4f", *r.CostUSD)
}

// spendText is a total of runs on one line.
func spendText(s *api.Spend) string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("%d run(s), %d failed; %d tokens in / %d out; $%.4f%s", s.Runs, s.FailedRuns, s.InputTokens, s.OutputTokens, s.CostUSD,
		unpricedText(s.UnpricedRuns))
}

// unpricedText says that a total leaves out runs of unknown cost.
func unpricedText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" + %d run(s) at unknown cost", n)
}

func logsCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("logs", flag.ContinueOnError)
	e.common(fs)
	follow := fs.Bool("follow", false, "stream a run in flight until it ends")
	return leaf("logs", "logs <run-id | agent@wf[:tag]> [--follow] [--json]",
		"show a run's transcript (an agent's newest run, or its live session's): its prompt (system prompt and inbox), text, tool calls and results, usage, result or error", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(args[0], "run_") { // an agent: its newest run
				id, err := newestRun(ctx, c, args[0])
				if err != nil {
					return err
				}
				args = []string{id}
			}
			p := &transcriptPrinter{e: e}
			if !*follow {
				d, err := c.GetRun(ctx, args[0])
				if err != nil {
					return err
				}
				p.header(d.Run)
				for _, ev := range d.Events {
					if err := p.event(ev); err != nil {
						return err
					}
				}
				return p.end(d.Run)
			}
			ctx, stop := interruptible(ctx)
			defer stop()
			run, err := c.FollowRun(ctx, args[0], p.header, p.event)
			if err != nil {
				return err
			}
			return p.end(run)
		})
}

// maxShown is how much of a tool's arguments or result, or of a prompt's
// system text, logs prints; --json has everything the daemon stored.
const maxShown = 2000

// transcriptPrinter prints a run's transcript: one line per event (long
// text continues on indented lines), tool calls indented under the text.
type transcriptPrinter struct {
	e *env
}

func (p *transcriptPrinter) header(r api.Run) {
	if p.e.json {
		return
	}
	p.e.printf("run %s: %s (%s, attempt %d), started %s\n", r.ID, r.Agent, r.Backend, r.Attempt, r.StartedAt.Local().Format(time.DateTime))
}

func (p *transcriptPrinter) line(at time.Time, indent, label, text string) {
	prefix := at.Local().Format(time.TimeOnly) + " " + indent + fmt.Sprintf("%-11s ", label)
	pad := strings.Repeat(" ", len(prefix))
	for i, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if i == 0 {
			p.e.printf("%s%s\n", prefix, l)
		} else {
			p.e.printf("%s%s\n", pad, l)
		}
	}
}

func (p *transcriptPrinter) event(ev api.RunEvent) error {
	if p.e.json {
		return p.e.printNDJSON(ev)
	}
	switch ev.Kind {
	case api.RunEventPrompt:
		var pr api.PromptEvent
		if err := json.Unmarshal(ev.Data, &pr); err != nil {
			return fmt.Errorf("decode prompt event %d: %w", ev.N, err)
		}
		p.line(ev.At, "", "system", orNone(clip(pr.System, maxShown)))
		for _, m := range pr.Inbox {
			from := m.From
			if m.To != "" {
				from += " (DM)"
			}
			p.line(ev.At, "", "inbox", fmt.Sprintf("#%d %s: %s", m.Seq, from, clip(m.Content, maxShown)))
		}
		if pr.Omitted > 0 {
			p.line(ev.At, "", "inbox", fmt.Sprintf("(%d newer message(s) not recorded)", pr.Omitted))
		}
	case string(backend.EventToolCall), string(backend.EventToolResult):
		var tc backend.ToolCall
		if err := json.Unmarshal(ev.Data, &tc); err != nil {
			return fmt.Errorf("decode tool event %d: %w", ev.N, err)
		}
		if ev.Kind == string(backend.EventToolCall) {
			p.line(ev.At, "  ", "tool call", tc.Name+" "+clip(string(tc.Args), maxShown))
			break
		}
		label := "result"
		if tc.IsError {
			label = "tool error"
		}
		p.line(ev.At, "    ", label, clip(tc.Result, maxShown))
	case api.RunEventContext:
		var rc backend.RunContext
		if json.Unmarshal(ev.Data, &rc) == nil {
			p.line(ev.At, "", "context", fmt.Sprintf("%d channel message(s), notes %d bytes, %d document(s)", len(rc.Recent), len(rc.Notes), len(rc.Documents)))
		}
	case string(backend.EventUsage):
		var u backend.Usage
		if err := json.Unmarshal(ev.Data, &u); err != nil {
			return fmt.Errorf("decode usage event %d: %w", ev.N, err)
		}
		text := fmt.Sprintf("%d tokens in / %d out", u.InputTokens, u.OutputTokens)
		if u.CostUSD > 0 {
			text += fmt.Sprintf(", $%.4f reported by the backend", u.CostUSD)
		}
		p.line(ev.At, "", "usage", text)
	default:
		var d struct {
			Text         string `json:"text"`
			SessionID    string `json:"session_id"`
			SessionBytes int    `json:"session_bytes"`
			Truncated    int    `json:"truncated"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		text := d.Text
		switch {
		case d.SessionID != "":
			text = d.SessionID
		case d.SessionBytes > 0:
			text = fmt.Sprintf("(%d bytes)", d.SessionBytes)
		case d.Truncated > 0:
			text = fmt.Sprintf("(an event of %d bytes, too large to keep)", d.Truncated)
		}
		p.line(ev.At, "", ev.Kind, text)
	}
	return nil
}

// end prints how the run ended: its state, duration, tokens and cost, and
// its error.
func (p *transcriptPrinter) end(r api.Run) error {
	if p.e.json {
		data, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return p.e.printNDJSON(api.RunEvent{Kind: "end", Data: data, At: r.StartedAt.Add(time.Duration(r.DurationMS) * time.Millisecond)})
	}
	if r.EndedAt == nil {
		p.e.printf("end: still running (follow it with `agent-worker logs %s --follow`)\n", r.ID)
		return nil
	}
	p.e.printf("end: %s after %s; %d tokens in / %d out; %s\n", r.State, runDuration(r), r.InputTokens, r.OutputTokens, costText(r))
	if r.Error != "" {
		p.e.printf("error: %s\n", r.Error)
	}
	return nil
}

// clip cuts s to max bytes (on a rune boundary) and says how long it was.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes in all)", s[:n], len(s))
}

// newestRun is the id of agent's newest run (a live session's pseudo-run
// included), for `logs <agent>`.
func newestRun(ctx context.Context, c *api.Client, agent string) (string, error) {
	t, err := parseAgentTarget(agent)
	if err != nil {
		return "", err
	}
	runs, err := c.Runs(ctx, api.RunQuery{Target: t.String(), Limit: 1})
	if err != nil {
		return "", err
	}
	if len(runs) == 0 {
		return "", api.Errorf(api.CodeNotFound, "%s has no runs yet: `agent-worker runs` lists the runs there are", t.Display())
	}
	return runs[0].ID, nil
}
