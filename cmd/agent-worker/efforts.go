package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/mcpserver"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// skillsListCmd is `skills list [@wf[:tag]]`.
func skillsListCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("skills list", flag.ContinueOnError)
	e.common(fs)
	return leaf("list", "skills list [@wf[:tag]] [--json]",
		"list the skills a workflow's agents find (its skills: folders, the project's .agent-worker/skills/, then ~/.agent-worker/skills/), looked for afresh",
		fs, [2]int{0, 1}, func(ctx context.Context, args []string) error {
			l, err := e.skillList(ctx, args)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(l)
			}
			if len(l.Skills) == 0 {
				e.printf("no skills in %s: a skill is <folder>/<name>/SKILL.md (docs/skills.md)\n", strings.Join(l.Folders, ", "))
			} else {
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tPHASES\tFILE\tDESCRIPTION")
				for _, s := range l.Skills {
					names := make([]string, len(s.Phases))
					for i, p := range s.Phases {
						names[i] = p.Name
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, strings.Join(names, ","), s.Path, s.Description)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			for _, p := range l.Problems {
				fmt.Fprintf(e.stderr, "problem: %s\n", p)
			}
			for _, w := range l.Warnings {
				fmt.Fprintf(e.stderr, "warning: %s\n", w)
			}
			return nil
		})
}

// skillList is the skills the agents of the workflow args name (if any)
// find, looked for afresh by the daemon.
func (e *env) skillList(ctx context.Context, args []string) (api.SkillList, error) {
	target, err := scopeArg(args)
	if err != nil {
		return api.SkillList{}, err
	}
	c, err := e.connect(ctx, true)
	if err != nil {
		return api.SkillList{}, err
	}
	return c.Skills(ctx, target)
}

// scopeArg reads an optional @wf[:tag] argument.
func scopeArg(args []string) (string, error) {
	if len(args) == 0 {
		return "", nil
	}
	t, err := parseTarget(args[0])
	if err != nil {
		return "", err
	}
	if !t.IsScope() {
		return "", usagef("%s names an agent: give its workflow, @%s:%s", args[0], t.Workflow, t.Tag)
	}
	return t.String(), nil
}

// skillsShowCmd is `skills show <name> [@wf[:tag]]`.
func skillsShowCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("skills show", flag.ContinueOnError)
	e.common(fs)
	return leaf("show", "skills show <name> [@wf[:tag]] [--json]",
		"show a skill: its phases with their instructions, tool rules, proof and evidence, and where its file is",
		fs, [2]int{1, 2}, func(ctx context.Context, args []string) error {
			l, err := e.skillList(ctx, args[1:])
			if err != nil {
				return err
			}
			var names []string
			for _, s := range l.Skills {
				if s.Name != args[0] {
					names = append(names, s.Name)
					continue
				}
				if e.json {
					return e.printJSON(s)
				}
				e.printf("%s: %s\nfile: %s\n", s.Name, s.Description, s.Path)
				if len(s.Directives) > 0 {
					e.printf("directives: %s\n", strings.Join(s.Directives, ", "))
				}
				if len(s.Next) > 0 {
					e.printf("next: %s\n", strings.Join(s.Next, ", "))
				}
				for _, p := range s.Phases {
					e.printf("\n%s\n", mcpserver.PhaseText(p))
				}
				return nil
			}
			return api.Errorf(api.CodeNotFound, "no skill %q in %s%s", args[0], strings.Join(l.Folders, ", "), closestSkill(args[0], names))
		})
}

func closestSkill(name string, names []string) string {
	if c := closest(name, names); c != "" {
		return ": did you mean " + c + "?"
	}
	return ""
}

// effortCmd groups the commands on one agent's effort.
func effortCmd(e *env) *ffcli.Command {
	return &ffcli.Command{
		Name:       "effort",
		ShortUsage: "agent-worker effort start <dir> <skill> --agent A | next --agent A [--proof k=v]... | log <text> --agent A | finish --agent A [--abandon --reason R] | show [<id> | --agent A]",
		ShortHelp:  "start, walk, log, finish and show an agent's effort: a skill applied to a work directory, phase by phase (docs/skills.md)",
		LongHelp: `An effort is a skill (a SKILL.md procedure of phases) applied to a work
directory by one agent; a directory numbers its efforts 1, 2, 3 and each writes
its artifacts there (1_IMPLEMENT_LOG.md, 1_IMPLEMENT.md). An agent has at most one
active effort. Agents walk theirs with the effort_* MCP tools; these commands
do the same for an agent you name: next leaves the current phase with its
proof (the daemon checks the phase's evidence too), finish ends the last one or
abandons the effort.`,
		FlagSet:     flag.NewFlagSet("effort", flag.ContinueOnError),
		Options:     []ff.Option{ff.WithEnvVarPrefix(envPrefix)},
		Subcommands: []*ffcli.Command{effortStartCmd(e), effortNextCmd(e), effortLogCmd(e), effortFinishCmd(e), effortShowCmd(e)},
		Exec: func(context.Context, []string) error {
			return usagef("usage: agent-worker effort start|next|log|finish|show (see agent-worker effort --help)")
		},
	}
}

// agentFlag registers --agent, which every effort command needs.
func agentFlag(fs *flag.FlagSet) *string {
	return fs.String("agent", "", "the agent whose effort it is (agent@wf[:tag])")
}

func needAgent(a string) (string, error) {
	if a == "" {
		return "", usagef("which agent? add --agent agent@wf[:tag]")
	}
	t, err := parseAgentTarget(a)
	if err != nil {
		return "", err
	}
	return t.String(), nil
}

// proofFlag collects --proof k=v flags.
type proofFlag map[string]string

func (p proofFlag) String() string { return "" }

func (p proofFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("--proof %q: write name=value, e.g. --proof plan_summary='add a flag'", s)
	}
	p[strings.TrimSpace(k)] = v
	return nil
}

// effortFlags is the flag set every effort step command has: the common
// flags and --agent.
func (e *env) effortFlags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	e.common(fs)
	return fs, agentFlag(fs)
}

// effortCall is one effort step command's request for the agent who.
type effortCall func(ctx context.Context, c *api.Client, who string, args []string) (tools.EffortResult, error)

// effortLeaf builds an effort step command: it reads the agent --agent
// names, lets check (if any) refuse or resolve the arguments in place, both
// before any daemon is started, then connects, calls and prints the answer
// with text (or as JSON).
func (e *env) effortLeaf(name, usage, help string, fs *flag.FlagSet, agent *string, nargs [2]int,
	check func(args []string) error, call effortCall, text func(tools.EffortResult) string) *ffcli.Command {
	return leaf(name, usage, help, fs, nargs, func(ctx context.Context, args []string) error {
		who, err := needAgent(*agent)
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(args); err != nil {
				return err
			}
		}
		c, err := e.connect(ctx, true)
		if err != nil {
			return err
		}
		res, err := call(ctx, c, who, args)
		if err != nil {
			return err
		}
		return e.printEffort(res, text)
	})
}

func effortStartCmd(e *env) *ffcli.Command {
	fs, agent := e.effortFlags("effort start")
	mode := fs.String("mode", "", "a word for how the agent works on it (e.g. solo), kept with the effort")
	return e.effortLeaf("start", "effort start <dir> <skill> --agent A [--mode M] [--json]",
		"start an effort of skill on dir (inside the agent's workspace) for the agent: prints its first phase and what earlier efforts on dir left",
		fs, agent, [2]int{2, 2}, func(args []string) error {
			dir, err := filepath.Abs(args[0])
			if err != nil {
				return usagef("dir %s: %v", args[0], err)
			}
			args[0] = dir
			return nil
		}, func(ctx context.Context, c *api.Client, who string, args []string) (tools.EffortResult, error) {
			return c.EffortStart(ctx, api.EffortStartRequest{Agent: who, Dir: args[0], Skill: args[1], Mode: *mode})
		}, mcpserver.EffortText)
}

// printEffort prints an effort step's answer with text, or as JSON; the
// token stays with the daemon (the CLI acts with the current one).
func (e *env) printEffort(res tools.EffortResult, text func(tools.EffortResult) string) error {
	res.Token = ""
	if e.json {
		return e.printJSON(res)
	}
	e.printf("%s\n", text(res))
	return nil
}

func effortNextCmd(e *env) *ffcli.Command {
	fs, agent := e.effortFlags("effort next")
	proof := proofFlag{}
	fs.Var(proof, "proof", "a proof field of the phase, name=value (repeat it); lists are a,b or a JSON array")
	notes := fs.String("notes", "", "what the next phase should know")
	return e.effortLeaf("next", "effort next --agent A [--proof k=v]... [--notes TEXT] [--json]",
		"leave the agent's current phase with its proof (the daemon checks the phase's evidence too) and print the next; from the last phase, finish",
		fs, agent, [2]int{0, 0}, nil, func(ctx context.Context, c *api.Client, who string, _ []string) (tools.EffortResult, error) {
			return c.EffortNext(ctx, api.EffortNextRequest{Agent: who, Proof: proof, Notes: *notes})
		}, mcpserver.EffortText)
}

func effortLogCmd(e *env) *ffcli.Command {
	fs, agent := e.effortFlags("effort log")
	return e.effortLeaf("log", "effort log <text> --agent A [--json]",
		"append a dated entry to the agent's effort log file (<n>_<SKILL>_LOG.md in its directory)",
		fs, agent, [2]int{1, 1}, nil, func(ctx context.Context, c *api.Client, who string, args []string) (tools.EffortResult, error) {
			return c.EffortLog(ctx, api.EffortLogRequest{Agent: who, Text: args[0]})
		}, func(res tools.EffortResult) string { return "logged in " + res.Log })
}

func effortFinishCmd(e *env) *ffcli.Command {
	fs, agent := e.effortFlags("effort finish")
	abandon := fs.Bool("abandon", false, "give the effort up instead (needs --reason)")
	reason := fs.String("reason", "", "why it is abandoned")
	notes := fs.String("notes", "", "the debrief the next effort on the directory reads")
	proof := proofFlag{}
	fs.Var(proof, "proof", "a proof field of the last phase, name=value (repeat it)")
	return e.effortLeaf("finish", "effort finish --agent A [--proof k=v]... [--notes TEXT] | --agent A --abandon --reason R [--json]",
		"finish the agent's effort from its last phase (with its proof; its evidence must have been observed), or abandon it with a reason",
		fs, agent, [2]int{0, 0}, func([]string) error {
			if *abandon && strings.TrimSpace(*reason) == "" {
				return usagef("--abandon needs --reason: say why")
			}
			return nil
		}, func(ctx context.Context, c *api.Client, who string, _ []string) (tools.EffortResult, error) {
			return c.EffortFinish(ctx, api.EffortFinishRequest{Agent: who, Abandon: *abandon, Reason: *reason, Notes: *notes, Proof: proof})
		}, mcpserver.EffortText)
}

func effortShowCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("effort show", flag.ContinueOnError)
	e.common(fs)
	agent := fs.String("agent", "", "show the agent's active effort (else its latest) (agent@wf[:tag])")
	return leaf("show", "effort show [<effort-id> | --agent A] [--json]",
		"show an effort: where it is, what its phase needs, and its history (each phase with its proof, notes and evidence)",
		fs, [2]int{0, 1}, func(ctx context.Context, args []string) error {
			id, who := "", ""
			if len(args) == 1 {
				id = args[0]
			}
			if *agent != "" {
				var err error
				if who, err = needAgent(*agent); err != nil {
					return err
				}
			}
			if id == "" && who == "" {
				return usagef("which effort? give its id (effort-3) or --agent agent@wf[:tag]")
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			s, err := c.EffortShow(ctx, id, who)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(s)
			}
			e.printf("%s: %s #%d on %s by %s, %s, phase %d of %d (%s)\n", s.ID, s.Skill, s.Ordinal, s.Dir, s.Agent, s.State, s.Phase, s.Phases, s.PhaseName)
			if s.Reason != "" {
				e.printf("abandoned: %s\n", s.Reason)
			}
			if s.Current != nil {
				e.printf("\n%s\n", mcpserver.PhaseText(*s.Current))
			}
			e.printf("\nhistory:\n")
			for _, c := range s.History {
				line := fmt.Sprintf("%d. %s %s %s", c.N, c.At.UTC().Format(time.RFC3339), c.Kind, c.PhaseName)
				if len(c.Proof) > 0 {
					line += fmt.Sprintf(" proof=%v", c.Proof)
				}
				if len(c.Evidence) > 0 {
					line += fmt.Sprintf(" evidence=%v", c.Evidence)
				}
				if c.Notes != "" {
					line += " notes: " + c.Notes
				}
				e.printf("  %s\n", line)
			}
			return nil
		})
}

// effortsCmd is the fleet view.
func effortsCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("efforts", flag.ContinueOnError)
	e.common(fs)
	all := fs.Bool("all", false, "also list finished and abandoned efforts")
	return leaf("efforts", "efforts [dir | @wf[:tag]] [--all] [--json]",
		"list the efforts under way (of a directory or a workflow): agent, skill, ordinal, phase, last sign of life, context use",
		fs, [2]int{0, 1}, func(ctx context.Context, args []string) error {
			dir, target := "", ""
			if len(args) == 1 {
				if strings.HasPrefix(args[0], "@") {
					t, err := parseTarget(args[0])
					if err != nil {
						return err
					}
					target = t.String()
				} else {
					abs, err := filepath.Abs(args[0])
					if err != nil {
						return usagef("dir %s: %v", args[0], err)
					}
					if info, err := os.Stat(abs); err != nil || !info.IsDir() {
						return usagef("%s is not a directory (or give @wf[:tag])", args[0])
					}
					dir = abs
				}
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			l, err := c.Efforts(ctx, dir, target, *all)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(l)
			}
			if len(l.Efforts) == 0 {
				e.printf("no efforts under way: start one with agent-worker effort start <dir> <skill> --agent A\n")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENT\tSKILL\t#\tPHASE\tSTATE\tHEARTBEAT\tCONTEXT\tDIR")
			for _, r := range l.Efforts {
				ctxUse := "-"
				switch {
				case r.ContextWindow > 0:
					ctxUse = fmt.Sprintf("%d%%", r.ContextTokens*100/r.ContextWindow)
				case r.ContextTokens > 0: // the model's window is not known
					ctxUse = fmt.Sprintf("%d tok", r.ContextTokens)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d/%d %s\t%s\t%s\t%s\t%s\n", r.ID, r.Agent, r.Skill, r.Ordinal, r.Phase, r.Phases, r.PhaseName,
					r.State, r.HeartbeatAt.UTC().Format(time.RFC3339), ctxUse, r.Dir)
			}
			return tw.Flush()
		})
}
