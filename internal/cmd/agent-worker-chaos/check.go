package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// mockScript is the agents' script: a pause, so that a kill or an outage
// finds runs in flight, then a reply through the channel_send tool (the
// MCP path, with the run's token) and a result the daemon posts when it
// settles the run (the store's path).
func mockScript(pause time.Duration) []map[string]any {
	return []map[string]any{
		{"sleep": pause.String()},
		{"reply": "working on it ({{attempt}})"},
		{"result": "done"},
	}
}

// createAgents registers n standalone mock agents (in @global, as `new
// --backend mock` does) through c and returns their names.
func createAgents(ctx context.Context, c *api.Client, n int, pause time.Duration) ([]string, error) {
	script, _ := json.Marshal(mockScript(pause))
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("a%d", i+1)
		spec := api.AgentSpec{Name: names[i], Backend: "mock"}
		spec.Config.Extra = map[string]json.RawMessage{"script": script}
		if _, err := c.CreateAgent(ctx, spec); err != nil {
			return nil, fmt.Errorf("new %s: %w", names[i], err)
		}
	}
	return names, nil
}

// marker posts the line after which the scenario's messages are read
// back: peek pages by since_seq, which cannot start before the first seq.
func marker(ctx context.Context, c *api.Client, scenario string) (int64, error) {
	m, err := c.Send(ctx, api.SendRequest{Target: "@" + api.GlobalWorkflow, Message: "chaos " + scenario + " begins"})
	if err != nil {
		return 0, fmt.Errorf("send the start line: %w", err)
	}
	return m.Seq, nil
}

// quiesce waits until every agent is idle with an empty inbox, as `list
// --json` shows them, twice in a row, or until limit has passed; then it
// returns the agents that are not, each with what is wrong.
func quiesce(ctx context.Context, clients []*api.Client, agents []string, limit time.Duration) (stuck []string, took time.Duration, err error) {
	start := time.Now()
	deadline := start.Add(limit)
	quiet := 0
	for i := 0; ; i++ {
		c := clients[i%len(clients)]
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		list, err := c.ListAgents(rctx)
		cancel()
		stuck = stuck[:0]
		if err == nil {
			for _, name := range agents {
				i := slices.IndexFunc(list, func(a api.Agent) bool { return a.Name == name && a.Workflow == api.GlobalWorkflow })
				switch {
				case i < 0:
					stuck = append(stuck, name+" (gone)")
				case list[i].State != api.AgentIdle || list[i].InboxDepth != 0:
					s := fmt.Sprintf("%s (%s, inbox %d", name, list[i].State, list[i].InboxDepth)
					if list[i].Error != "" {
						s += ": " + list[i].Error
					}
					stuck = append(stuck, s+")")
				}
			}
		}
		if err == nil && len(stuck) == 0 {
			if quiet++; quiet == 2 {
				return nil, time.Since(start), nil
			}
		} else {
			quiet = 0
		}
		if ctx.Err() != nil {
			return nil, time.Since(start), ctx.Err()
		}
		if time.Now().After(deadline) {
			if err != nil {
				return nil, time.Since(start), fmt.Errorf("list agents: %w", err)
			}
			return stuck, time.Since(start), nil
		}
		ctxSleep(ctx, 250*time.Millisecond)
	}
}

// readChannel pages through @global after seq since, oldest first.
func readChannel(ctx context.Context, c *api.Client, since int64) ([]api.Message, error) {
	var all []api.Message
	for {
		page, err := c.Peek(ctx, "@"+api.GlobalWorkflow, 1000, since)
		if err != nil {
			return nil, fmt.Errorf("peek after seq %d: %w", since, err)
		}
		if len(page) == 0 {
			return all, nil
		}
		all = append(all, page...)
		since = page[len(page)-1].Seq
	}
}

// row is one scenario's line of the table.
type row struct {
	scenario                 string
	skipped                  string // why the scenario did not run
	acked, stored, lost, dup int
	storedNoAck              int
	stuck                    []string
	outage503, outageOther   map[string]int
	outages                  int // how many outages the scenario made
	outside                  map[string]int
	replies                  int
	took                     time.Duration
	notes                    []string // what happened, in order
	defects                  []string // what the daemon did wrong besides the counts
}

// failed says whether the row fails the run.
func (r *row) failed() bool {
	return r.skipped == "" && (r.lost > 0 || r.dup > 0 || len(r.stuck) > 0 || len(r.defects) > 0)
}

func (r *row) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	step("%s: %s", r.scenario, s)
	r.notes = append(r.notes, s)
}

func (r *row) defect(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	step("%s: DEFECT: %s", r.scenario, s)
	r.defects = append(r.defects, s)
}

// settle ends a scenario's load and fills r from what is stored: it stops
// the senders, waits for the agents to be quiet, reads the channel after
// since, and sets every count of the row.
func settle(ctx context.Context, cfg config, r *row, l *load, clients []*api.Client, since int64) error {
	l.halt()
	limit := cfg.heartbeat + 30*time.Second
	stuck, took, err := quiesce(ctx, clients, l.agents, limit)
	if err != nil {
		return err
	}
	r.stuck = stuck
	if len(stuck) == 0 {
		r.note("every agent idle with an empty inbox %s after the senders stopped", took.Round(100*time.Millisecond))
	}
	msgs, err := readChannel(ctx, clients[0], since)
	if err != nil {
		return err
	}
	stored := map[string][]api.Message{}
	for _, m := range msgs {
		if slices.Contains(l.agents, m.From) {
			r.replies++
			continue
		}
		// POST /send posts as "user", the human operator.
		i := strings.Index(m.Content, "chaos-"+r.scenario+"-")
		if m.From != "user" || i < 0 {
			continue
		}
		stored[m.Content[i:]] = append(stored[m.Content[i:]], m)
		r.stored++
	}
	acked, attempted := l.ledger()
	r.acked = len(acked)
	for text, a := range acked {
		got := stored[text]
		switch {
		case len(got) == 0:
			r.lost++
			if r.lost <= 5 {
				r.defect("acknowledged %q (seq %d) is not stored", text, a.seq)
			}
		case got[0].Seq != a.seq || got[0].ID != a.id:
			r.defect("%q acknowledged as seq %d id %s, stored as seq %d id %s", text, a.seq, a.id, got[0].Seq, got[0].ID)
		}
	}
	for text, got := range stored {
		if len(got) > 1 {
			r.dup++
			if r.dup <= 5 {
				r.defect("%q stored %d times (seqs %d, %d)", text, len(got), got[0].Seq, got[1].Seq)
			}
		}
		if _, ok := acked[text]; !ok {
			r.storedNoAck++
			if !attempted[text] {
				r.defect("%q is stored but was never sent", text)
			}
		}
	}
	r.outage503, r.outageOther, r.outside = l.errorCounts()
	if n := total(r.outageOther); n > 0 {
		r.defect("%d sends during a store outage were answered otherwise than 503: %s", n, kinds(r.outageOther))
	}
	return nil
}
