package direct

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// summarySystem is the instruction of the summary request; %d is the
// number of words the summary may take.
const summarySystem = "You keep the long-term memory of an AI agent that works with a team. " +
	"The oldest runs of its conversation are being dropped to keep it short. " +
	"Write a concise summary of them, merged with the earlier summary if there is one: " +
	"the facts, decisions, commitments, open tasks, names and files the agent will need later; " +
	"leave out greetings and detail it can look up again. " +
	"Write plain text in the second person (\"You …\"), no preamble, at most %d words."

// remember adds the run's exchange to mem. When older exchanges must go to
// keep it under the limit, it first asks the model to fold them into the
// memory's summary (the usage counts in the run's); if that fails they
// are dropped all the same and the transcript says why, since a run never
// fails for its memory.
func remember(ctx context.Context, m model, mem *memory, e exchange, cfg config, usage *backend.Usage, out *sender) error {
	mem.add(e, cfg.memory)
	n := mem.overflow(cfg.memory)
	if n == 0 {
		return nil
	}
	runs := fmt.Sprintf("%d older %s", n, plural(n, "run"))
	sctx, cancel := context.WithTimeout(ctx, summaryTimeout)
	defer cancel()
	start := time.Now()
	t, err := summarize(sctx, m, mem.Summary, mem.Exchanges[:n], summaryBudget(cfg.memory))
	if err != nil {
		if failed := out.failed(); failed != nil {
			return failed
		}
		mem.forget(n, "", cfg.memory)
		return out.send(backend.Event{Kind: backend.EventLog, Text: fmt.Sprintf("sdk: memory: forgot %s without a summary (%s/%s: %v)", runs, m.provider, m.name, err)})
	}
	usage.InputTokens += t.in
	usage.OutputTokens += t.out
	usage.CostUSD = cost(m, *usage, cfg.Prices)
	if err := out.send(backend.Event{Kind: backend.EventUsage, Usage: withCall(*usage, m, t, start)}); err != nil {
		return err
	}
	mem.forget(n, t.text, cfg.memory)
	return out.send(backend.Event{Kind: backend.EventLog, Text: fmt.Sprintf("sdk: memory: forgot %s, keeping this summary:\n%s", runs, mem.Summary)})
}

// summarize asks the model for a summary of dropped, merged with previous,
// in about budget tokens; its text is the summary.
func summarize(ctx context.Context, m model, previous string, dropped []exchange, budget int) (turn, error) {
	var b strings.Builder
	if previous != "" {
		fmt.Fprintf(&b, "The earlier summary:\n%s\n\n", previous)
	}
	b.WriteString("The runs being dropped, oldest first:\n")
	for i, e := range dropped {
		fmt.Fprintf(&b, "\n## Run %d\nWhat the agent was given:\n%s\n\nWhat the agent did and answered:\n%s\n", i+1, e.Prompt, e.Reply)
	}
	words := max(budget/2, 40) // four characters a token, six a word with its space, and some slack
	t, err := m.chat(fmt.Sprintf(summarySystem, words), nil, b.String(), nil, summaryMaxTokens).
		send(ctx, func(string) error { return nil })
	if err == nil && strings.TrimSpace(t.text) == "" {
		err = errors.New("the model returned no summary")
	}
	return t, err
}
