package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
)

// worktreeCmd groups the git worktree commands: each agent of a workflow
// with workspace: {git: worktree} works in its own worktree.
func worktreeCmd(e *env) *ffcli.Command {
	return &ffcli.Command{
		Name:       "worktree",
		ShortUsage: "agent-worker worktree list [@wf[:tag] | agent] | integrate <agent> [--into BRANCH] | discard <agent> --reason R [--force] | queue [@wf[:tag]] | queue show <id> | dequeue <id>",
		ShortHelp:  "see, merge and throw away the agents' git worktrees (workflows with workspace: {git: worktree})",
		LongHelp: `A workflow with workspace: {git: worktree, base: main} gives each agent a git
worktree of its own, on branch aw/<workflow>/<tag>/<agent>, under
$AGENT_WORKER_HOME/worktrees/. integrate merges an agent's branch into the base
(or --into BRANCH) with a merge commit; discard throws the worktree and the
branch away. When an agent or its workflow stops, its worktree is removed,
unless it holds work not merged into the base: that is kept and listed here.

With workspace: {checks: [...]} integrate puts the branch in the merge queue
instead: the queue merges a batch of branches onto the base in a scratch
worktree, runs the checks there, and moves the base only when they pass (a
failing batch is bisected to find the branch that breaks it). queue lists it,
queue show <id> shows an entry with its check logs, dequeue takes one out.`,
		FlagSet: flag.NewFlagSet("worktree", flag.ContinueOnError),
		Options: []ff.Option{ff.WithEnvVarPrefix(envPrefix)},
		Subcommands: []*ffcli.Command{
			worktreeListCmd(e), worktreeIntegrateCmd(e), worktreeDiscardCmd(e), worktreeQueueCmd(e), worktreeDequeueCmd(e),
		},
		Exec: func(context.Context, []string) error {
			return usagef("usage: agent-worker worktree list|integrate|discard|queue|dequeue (see agent-worker worktree --help)")
		},
	}
}

func worktreeListCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("worktree list", flag.ContinueOnError)
	e.common(fs)
	return leaf("list", "worktree list [@wf[:tag] | agent] [--json]",
		"list the agents' worktrees: branch, commits ahead/behind the base, uncommitted changes, last commit; kept ones say why",
		fs, [2]int{0, 1}, func(ctx context.Context, args []string) error {
			target := ""
			if len(args) == 1 {
				t, err := parseTarget(args[0])
				if err != nil {
					return err
				}
				target = t.String()
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			ws, err := c.Worktrees(ctx, target)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.WorktreeList{Worktrees: ws})
			}
			return e.printWorktrees(ws)
		})
}

// printWorktrees is the table of `worktree list`, then what to do about
// each kept worktree.
func (e *env) printWorktrees(ws []api.Worktree) error {
	if len(ws) == 0 {
		e.printf("no worktrees: each agent of a running workflow with workspace: {git: worktree} gets one before its first run, " +
			"and a stopped agent's is removed unless it holds work not merged into the base\n")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	// The REPO column shows only where a workspace names repositories.
	repoCol := slices.ContainsFunc(ws, func(w api.Worktree) bool { return w.Repo != "" })
	repo := func(w api.Worktree) string {
		if !repoCol {
			return ""
		}
		return orDash(w.Repo) + "\t"
	}
	header := "AGENT\tSTATE\tBRANCH\tAHEAD/BEHIND\tCHANGES\tQUEUE\tLAST COMMIT\tPATH"
	if repoCol {
		header = "AGENT\tREPO\tSTATE\tBRANCH\tAHEAD/BEHIND\tCHANGES\tQUEUE\tLAST COMMIT\tPATH"
	}
	fmt.Fprintln(tw, header)
	for _, w := range ws {
		last := "-"
		if c := w.LastCommit; c != nil {
			last = fmt.Sprintf("%.12s %s", c.SHA, c.Subject)
		}
		queue := "-"
		if w.QueueID != "" {
			queue = fmt.Sprintf("%s %s", w.QueueID, w.QueueState)
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%d/%d %s\t%d\t%s\t%s\t%s\n", worktreeAgent(w), repo(w), w.State, w.Branch, w.Ahead, w.Behind, w.Base,
			len(w.Changed), queue, last, orDash(w.Path))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, w := range ws {
		if w.State == api.WorktreeKept {
			flag := ""
			if w.Repo != "" {
				flag = " --repo " + w.Repo
			}
			e.printf("%s: kept, %s: `agent-worker worktree integrate %s%s` or `agent-worker worktree discard %s%s --reason ...`\n",
				worktreeAgent(w), w.KeptBecause, worktreeAgent(w), flag, worktreeAgent(w), flag)
		}
	}
	return nil
}

func worktreeAgent(w api.Worktree) string {
	return api.Target{Agent: w.Agent, Workflow: w.Workflow, Tag: w.Tag}.String()
}

func worktreeIntegrateCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("worktree integrate", flag.ContinueOnError)
	e.common(fs)
	into := fs.String("into", "", "the branch to merge into (default: the repository's base branch)")
	repo := fs.String("repo", "", "the workspace repository (workspace.repos) whose branch to merge (default: the workflow's own)")
	return leaf("integrate", "worktree integrate <agent@wf[:tag]> [--into BRANCH] [--repo NAME] [--json]",
		"merge an agent's branch into the base (or --into) with a merge commit; a conflict changes nothing and lists the files",
		fs, [2]int{1, 1}, func(ctx context.Context, args []string) error {
			t, err := parseAgentTarget(args[0])
			if err != nil {
				return err
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			res, err := c.Integrate(ctx, t, api.IntegrateRequest{Target: *into, Repo: *repo})
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(res)
			}
			if res.Queued {
				e.printf("queued %s for %s as %s (%d ahead of it): it lands when the checks pass; `agent-worker worktree queue` follows it\n",
					res.Branch, res.Target, res.QueueID, res.Position)
				return nil
			}
			if !res.Merged {
				e.printf("%s already has every commit of %s: nothing to merge\n", res.Target, res.Branch)
				return nil
			}
			e.printf("merged %s into %s: commit %.12s, %d file(s) changed\n", res.Branch, res.Target, res.Commit, len(res.Files))
			return nil
		})
}

func worktreeDiscardCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("worktree discard", flag.ContinueOnError)
	e.common(fs)
	reason := fs.String("reason", "", "why the work is thrown away (posted in the team's channel); required")
	force := fs.Bool("force", false, "throw away uncommitted changes in the worktree too")
	repo := fs.String("repo", "", "the workspace repository (workspace.repos) whose worktree to discard (default: the workflow's own)")
	return leaf("discard", "worktree discard <agent@wf[:tag]> --reason R [--force] [--repo NAME] [--json]",
		"remove an agent's worktree and delete its branch (its next run starts afresh from the base); uncommitted changes refuse it unless --force",
		fs, [2]int{1, 1}, func(ctx context.Context, args []string) error {
			t, err := parseAgentTarget(args[0])
			if err != nil {
				return err
			}
			if *reason == "" {
				return usagef("worktree discard needs --reason: say why the work is thrown away (it is posted in the team's channel)")
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			res, err := c.Discard(ctx, t, contract.DiscardRequest{Reason: *reason, Force: *force, Repo: *repo})
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(res)
			}
			e.printf("discarded %s's worktree and branch %s", t.Display(), res.Branch)
			if res.LastCommit != "" {
				e.printf(" (its last commit was %.12s: `git branch %s %.12s` brings it back until git prunes it)", res.LastCommit, res.Branch, res.LastCommit)
			}
			e.printf("\n")
			return nil
		})
}
