package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/workflow"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

func skillsCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("skills", flag.ContinueOnError)
	return &ffcli.Command{
		Name:       "skills",
		ShortUsage: "agent-worker skills list [@wf[:tag]] | show <name> [@wf[:tag]] | check <SKILL.md>...",
		ShortHelp:  "work with skills, the SKILL.md procedures an effort walks phase by phase (docs/skills.md)",
		FlagSet:    fs,
		Subcommands: []*ffcli.Command{
			skillsListCmd(e), skillsShowCmd(e), skillsCheckCmd(e),
		},
		Exec: func(context.Context, []string) error {
			return usagef("usage: agent-worker skills list|show|check (see agent-worker skills --help)")
		},
	}
}

// skillCheck is one file's result in `skills check --json`.
type skillCheck struct {
	File     string         `json:"file"`
	Name     string         `json:"name,omitempty"`
	Phases   []string       `json:"phases,omitempty"`
	Problems []skillProblem `json:"problems,omitempty"`
}

type skillProblem struct {
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Message string `json:"message"`
}

func skillsCheckCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("skills check", flag.ContinueOnError)
	fs.BoolVar(&e.json, "json", false, "print JSON instead of text")
	return leaf("check", "skills check <SKILL.md>... [--json]",
		"check skill files without a daemon: every problem of each, at its line and column", fs, [2]int{1, -1},
		func(_ context.Context, files []string) error {
			var results []skillCheck
			var bad []string
			for _, file := range files {
				r := skillCheck{File: file}
				s, err := skill.Load(file)
				var ps workflow.Problems
				switch {
				case errors.As(err, &ps):
					for _, p := range ps {
						r.Problems = append(r.Problems, skillProblem{p.Line, p.Col, p.Msg})
					}
					bad = append(bad, fmt.Sprintf("%s has %d problem(s):\n%s", file, len(ps), ps.Error()))
				case err != nil:
					r.Problems = []skillProblem{{Message: err.Error()}}
					bad = append(bad, err.Error())
				default:
					r.Name, r.Phases = s.Name, s.PhaseNames()
					if !e.json {
						e.printf("ok: %s (%d phase%s: %s)\n", s.Name, len(s.Phases), plural(len(s.Phases)), strings.Join(r.Phases, ", "))
					}
				}
				results = append(results, r)
			}
			if e.json {
				if err := e.printJSON(map[string]any{"skills": results}); err != nil {
					return err
				}
				if len(bad) > 0 {
					return exitCode(api.ExitUsage)
				}
				return nil
			}
			if len(bad) > 0 {
				return api.Errorf(api.CodeInvalid, "%s", strings.Join(bad, "\n"))
			}
			return nil
		})
}
