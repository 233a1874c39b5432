package main

import (
	"context"
	"flag"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

func questionsCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("questions", flag.ContinueOnError)
	e.common(fs)
	all := fs.Bool("all", false, "answered and closed questions too, not only those waiting")
	return leaf("questions", "questions [agent | @wf[:tag]] [--all] [--json]",
		"list what agents asked you (ask_user), oldest first: those waiting for an answer, or every one with --all", fs, [2]int{0, 1},
		func(ctx context.Context, args []string) error {
			var target *api.Target
			if len(args) == 1 {
				t, err := usageTarget(api.ParseTarget(args[0]))
				if err != nil {
					return err
				}
				target = &t
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			qs, err := c.Questions(ctx, target, *all)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(api.QuestionList{Questions: qs})
			}
			if len(qs) == 0 {
				what := "no question waits for an answer"
				if *all {
					what = "no questions"
				}
				if target != nil {
					what += " from " + target.Display()
				}
				e.printf("%s\n", what)
				return nil
			}
			for i, q := range qs {
				if i > 0 {
					e.printf("\n")
				}
				e.printQuestion(q)
			}
			return nil
		})
}

// printQuestion shows one question as a block: who asks what, since when,
// its options and context, and the answer once there is one.
func (e *env) printQuestion(q api.Question) {
	kind := ""
	if q.Kind == "approval" {
		kind = "approval  "
	}
	e.printf("%s  %s%s  %s  %s ago\n", q.ID, kind, q.State, q.Agent, age(time.Since(q.CreatedAt)))
	e.printf("  %s\n", api.OneLine(q.Question, 500))
	if len(q.Options) > 0 {
		e.printf("  options: %s\n", strings.Join(q.Options, " | "))
	}
	if q.Context != "" {
		e.printf("  context: %s\n", api.OneLine(q.Context, 500))
	}
	switch {
	case q.State == "answered":
		e.printf("  answer:  %s (by %s, %s)\n", api.OneLine(q.Answer, 500), q.AnsweredBy, q.AnsweredAt.Local().Format(time.DateTime))
	case q.State == "approved" || q.State == "denied":
		e.printf("  %s by %s, %s", q.State, q.AnsweredBy, q.AnsweredAt.Local().Format(time.DateTime))
		if q.Answer != "" {
			e.printf(": %s", api.OneLine(q.Answer, 500))
		}
		e.printf("\n")
	case q.State == "pending" && q.Kind == "approval":
		e.printf("  approve with: agent-worker approve %s, or: agent-worker deny %s --reason …\n", q.ID, q.ID)
	case q.State == "pending":
		e.printf("  answer with: agent-worker answer %s <answer>\n", q.ID)
	case q.Answer != "":
		e.printf("  %s\n", api.OneLine(q.Answer, 500))
	}
}

// age is a short duration for a list: 45s, 12m, 3h, 2d.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Minute).String()
	case d < 48*time.Hour:
		return d.Round(time.Hour).String()
	}
	return strings.TrimSuffix((d/(24*time.Hour)).String(), "ns") + "d"
}

func answerCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("answer", flag.ContinueOnError)
	e.common(fs)
	return leaf("answer", "answer <question-id> <answer...> [--json]",
		"answer a question an agent asked (one of its options, or in words): the agent gets it as a message that wakes it", fs, [2]int{2, -1},
		func(ctx context.Context, args []string) error {
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			q, err := c.AnswerQuestion(ctx, args[0], strings.Join(args[1:], " "))
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(q)
			}
			e.printf("answered %s: %s now has %q in its inbox\n", q.ID, q.Agent, q.Answer)
			return nil
		})
}

func approveCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	e.common(fs)
	return leaf("approve", "approve <approval-id> [--json]",
		"let an agent's gated action (approvals: in its workflow) go ahead: its waiting call runs", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			return e.decide(ctx, args[0], true, "")
		})
}

func denyCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("deny", flag.ContinueOnError)
	e.common(fs)
	reason := fs.String("reason", "", "why: the agent's waiting call fails with it")
	return leaf("deny", "deny <approval-id> [--reason TEXT] [--json]",
		"refuse an agent's gated action: its waiting call fails with the reason", fs, [2]int{1, 1},
		func(ctx context.Context, args []string) error {
			return e.decide(ctx, args[0], false, *reason)
		})
}

// decide approves or denies an approval and says what happens next.
func (e *env) decide(ctx context.Context, id string, approve bool, reason string) error {
	c, err := e.connect(ctx, true)
	if err != nil {
		return err
	}
	q, err := c.Decide(ctx, id, approve, reason)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(q)
	}
	if approve {
		e.printf("approved %s: %s goes ahead with %s\n", q.ID, q.Agent, q.Question)
	} else {
		e.printf("denied %s: %s's %s fails", q.ID, q.Agent, q.Question)
		if q.Answer != "" {
			e.printf(" with %q", q.Answer)
		}
		e.printf("\n")
	}
	return nil
}
