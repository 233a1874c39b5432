package main

import (
	"context"
	"flag"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agent-worker/agent-worker/host/api"
)

// searchCmd is `search <@wf[:tag] | agent> <query>`: GET /search/{wf}/{tag}.
// A scope target searches as the owner (every direct message); an agent
// target searches as that agent, finding what it may see.
func searchCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	e.common(fs)
	kind := fs.String("kind", "", "only message, doc or run")
	n := fs.Int("n", 20, "how many hits, 1 to 100")
	return leaf("search", `search <@wf[:tag] | agent> <query> [--kind message|doc|run] [-n N] [--json]`,
		`full-text search of a team's messages, documents and run transcripts, best first (newest first for a very common word or a prefix*): words (stemmed: migrating finds migration), "a phrase", prefix*`,
		fs, [2]int{2, -1},
		func(ctx context.Context, args []string) error {
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			if *n < 1 || *n > 100 {
				return usagef("-n must be between 1 and 100")
			}
			switch *kind {
			case "", "message", "doc", "run":
			default:
				return usagef("--kind %q: use message, doc or run", *kind)
			}
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			res, err := c.Search(ctx, t, api.SearchQuery{Query: strings.Join(args[1:], " "), Kind: *kind, Limit: *n, As: t.Agent})
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(res)
			}
			if len(res.Hits) == 0 {
				e.printf("no matches\n")
			}
			for _, h := range res.Hits {
				e.printSearchHit(h)
			}
			return nil
		})
}

// printSearchHit prints what a hit is, its snippet and how to open it.
func (e *env) printSearchHit(h api.SearchHit) {
	scope := "@" + h.Workflow + ":" + h.Tag
	snippet := strings.Join(strings.Fields(h.Snippet), " ")
	switch h.Kind {
	case "doc":
		e.printf("document %s\n", h.Path)
		e.printf("    %s\n", snippet)
		e.dimf("    agent-worker doc read %s --file %s\n", scope, h.Path)
	case "run":
		e.printf("run %s (%s, event %d) %s\n", h.RunID, h.Agent, h.Event, h.At.Local().Format("2006-01-02 15:04:05"))
		e.printf("    %s\n", snippet)
		e.dimf("    agent-worker logs %s\n", h.RunID)
	default:
		dm := ""
		if h.To != "" {
			dm = " → " + h.To + " (direct)"
		}
		e.printf("message #%d %s%s %s\n", h.Seq, h.Sender, dm, h.At.Local().Format("2006-01-02 15:04:05"))
		e.printf("    %s\n", snippet)
		e.dimf("    agent-worker peek %s\n", scope)
	}
}
