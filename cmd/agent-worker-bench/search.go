package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/api"
)

// searchQueries are the searches measured on the million messages of
// myInbox1M ("@a<to> message <n>", 100 agents): how many messages each
// matches decides what it costs.
var searchQueries = []struct{ query, what string }{
	{"424242", "a word in 1 message"},
	{"a17", "a word in 10,000 messages"},
	{"message", "a word in all 1,000,000"},
	{`"a17 message"`, "a phrase in 10,000"},
	{"a1*", "a prefix* in 110,000"},
}

// searchRows measures GET /search on the store of home (myInbox1M's, a
// million messages) through a fresh daemon, each query calls times after
// one warm-up, beside the ceiling: the bare FTS5 query (MATCH, ORDER BY
// rank LIMIT 20, no join, no snippets) on the same file.
func searchRows(ctx context.Context, cfg config, t *table, home string, calls int) error {
	d, err := startDaemon(ctx, cfg, home)
	if err != nil {
		return err
	}
	defer d.stop(ctx)
	conn, err := sqlite.OpenConn(filepath.Join(home, api.DBFile), sqlite.OpenReadOnly|sqlite.OpenWAL)
	if err != nil {
		return err
	}
	defer conn.Close()
	scope := api.Target{Workflow: "big", Tag: "main"}
	for _, q := range searchQueries {
		lat := make([]time.Duration, 0, calls)
		for i := range calls + 1 {
			t0 := time.Now()
			res, err := d.client.Search(ctx, scope, api.SearchQuery{Query: q.query, Kind: "message"})
			el := time.Since(t0)
			if err != nil {
				return fmt.Errorf("search %s: %w", q.query, err)
			}
			if len(res.Hits) == 0 {
				return fmt.Errorf("search %s found nothing", q.query)
			}
			if i > 0 {
				lat = append(lat, el)
			}
		}
		p50, p99 := percentiles(lat)
		bare := make([]time.Duration, 0, calls)
		match := fts5(q.query)
		// The bare query ranks every match, seconds for a common word:
		// it runs up to 50 times, or for 10 s.
		for begin := time.Now(); len(bare) < min(calls, 50) && time.Since(begin) < 10*time.Second; {
			t0 := time.Now()
			err := sqlitex.Execute(conn, `SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank LIMIT 20`,
				&sqlitex.ExecOptions{Args: []any{match}, ResultFunc: func(*sqlite.Stmt) error { return nil }})
			if err != nil {
				return fmt.Errorf("bare fts5 %s: %w", match, err)
			}
			bare = append(bare, time.Since(t0))
		}
		b50, b99 := percentiles(bare)
		t.add(row{what: fmt.Sprintf("search, 1,000,000 messages, GET /search: %s (`%s`)", q.what, q.query),
			ours: fmt.Sprintf("p50 %s ms, p99 %s ms", ms(p50), ms(p99)), ceiling: fmt.Sprintf("bare FTS5 ranked: p50 %s ms, p99 %s ms", ms(b50), ms(b99)),
			goal: "p99 ≤ 5 ms"})
	}
	return nil
}

// fts5 is a benchmark query as FTS5 syntax (the store quotes every term;
// these need no quoting but the phrase's and the prefix's).
func fts5(q string) string {
	if q[len(q)-1] == '*' {
		return `"` + q[:len(q)-1] + `"*`
	}
	return q
}

// indexCost measures the daemon CPU per channel_send (8 go-sdk clients)
// of the daemon as built and of the same source built with -tags
// benchnoindex (messages left out of the search index), each in a fresh
// daemon, in turn.
func indexCost(ctx context.Context, cfg config, t *table) error {
	noIndex := filepath.Join(cfg.work, "agent-worker-noindex")
	build := exec.Command("go", "build", "-tags", "benchnoindex", "-o", noIndex, "./cmd/agent-worker")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.add(row{what: "daemon CPU per `channel_send`, search indexing on / off", ours: "not measured: go build -tags benchnoindex: " + err.Error()})
		return nil
	}
	cpu := map[bool]float64{}
	for _, index := range []bool{true, false} {
		c := cfg
		if !index {
			c.bin = noIndex
		}
		home, err := tempHome(cfg, fmt.Sprintf("index-%v", index))
		if err != nil {
			return err
		}
		d, err := startDaemon(ctx, c, home)
		if err != nil {
			return err
		}
		url, tokens, err := externalAgents(ctx, d.client, "bench", "s", 8)
		if err != nil {
			d.stop(ctx)
			return err
		}
		l, err := goLoad(ctx, url, tokens, cfg.calls, "channel_send", d.pid(), func(i int) map[string]any {
			return map[string]any{"message": fmt.Sprintf("@s%d the migration of table %d is done, see the notes", (i+1)%len(tokens), i)}
		})
		d.stop(ctx)
		if err != nil {
			return fmt.Errorf("channel_send (index %v): %w", index, err)
		}
		cpu[index] = l.cpuPerCall()
	}
	t.add(row{what: "daemon CPU per `channel_send` (go-sdk client, 8 clients), search indexing on / off (`-tags benchnoindex`)",
		ours: fmt.Sprintf("%.3f ms / %.3f ms: indexing adds %+.0f %%", cpu[true], cpu[false], (cpu[true]/cpu[false]-1)*100),
		goal: "indexing ≤ +15 %"})
	return nil
}
