package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agent-worker/agent-worker/host/api"
)

// searchQueries are the searches measured on the total messages of
// myInbox1M ("@a<to> message <n>", 100 agents; a million but under
// -quick): how many messages each matches decides what it costs.
func searchQueries(total int) []struct{ query, what string } {
	return []struct{ query, what string }{
		{fmt.Sprint(total * 424242 / 1_000_000), "a word in 1 message"},
		{"a17", fmt.Sprintf("a word in %s messages", count(total/100))},
		{"message", "a word in all " + count(total)},
		{`"a17 message"`, "a phrase in " + count(total/100)},
		{"a1*", "a prefix* in " + count(total*11/100)},
	}
}

// count writes n with thousands separators, as the table does.
func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// searchRows measures GET /search on the store of home (myInbox1M's, a
// million messages) through a fresh daemon, each query calls times after
// one warm-up, beside the ceiling: the bare FTS5 query (MATCH, ORDER BY
// rank LIMIT 20, no join, no snippets) on the same file. ts is the rows'
// TypeScript column.
func searchRows(ctx context.Context, cfg config, t *table, home string, total, calls int, ts string) error {
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
	for _, q := range searchQueries(total) {
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
		t.add(row{what: fmt.Sprintf("search, %s messages, GET /search: %s (`%s`)", count(total), q.what, q.query),
			ours: fmt.Sprintf("p50 %s ms, p99 %s ms", ms(p50), ms(p99)), ceiling: fmt.Sprintf("bare FTS5 ranked: p50 %s ms, p99 %s ms", ms(b50), ms(b99)),
			goal: "p99 ≤ 5 ms", ts: ts,
			method: fmt.Sprintf("On `my_inbox`'s store of %s messages (\"@a<to> message <n>\" among 100 agents), a fresh daemon on it: "+
				"`GET /search` of the team's messages, %d calls one at a time after one warm-up, beside the bare FTS5 query on the same file "+
				"(MATCH, ORDER BY rank LIMIT 20, no join, no snippets; up to 50 times or 10 s).", count(total), calls)})
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
// daemon, twice, in the order on, off, off, on so that the machine's drift
// over the four loads weighs on both alike. ts is the row's TypeScript
// column.
func indexCost(ctx context.Context, cfg config, t *table, ts string) error {
	noIndex := filepath.Join(cfg.work, "agent-worker-noindex")
	build := exec.Command("go", "build", "-tags", "benchnoindex", "-o", noIndex, "./cmd/agent-worker")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build builds the daemon it is set beside
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.add(row{what: "daemon CPU per `channel_send`, search indexing on / off", ours: "not measured: go build -tags benchnoindex: " + err.Error()})
		return nil
	}
	cpu := map[bool]float64{}
	for i, index := range []bool{true, false, false, true} {
		c := cfg
		if !index {
			c.bin = noIndex
		}
		home, err := tempHome(cfg, fmt.Sprintf("index-%v-%d", index, i))
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
		if err == nil {
			// The messages the indexer had not reached when the load
			// ended cost a search's catch-up: it is part of the load's
			// CPU (with the search's own), and the search must find them.
			before, _ := cpuTime(d.pid())
			var res api.SearchResult
			res, err = d.client.Search(ctx, api.Target{Workflow: "bench", Tag: "main"}, api.SearchQuery{Query: "migrating table", Kind: "message", Limit: 1})
			after, _ := cpuTime(d.pid())
			l.cpu += after - before
			if err == nil && index && len(res.Hits) == 0 {
				err = errors.New("search after the load found none of its messages")
			}
		}
		d.stop(ctx)
		if err != nil {
			return fmt.Errorf("channel_send (index %v): %w", index, err)
		}
		cpu[index] += l.cpuPerCall() / 2
	}
	t.add(row{what: "daemon CPU per `channel_send` (go-sdk client, 8 clients), search indexing on / off (`-tags benchnoindex`)",
		ours: fmt.Sprintf("%.3f ms / %.3f ms: indexing adds %+.0f %%", cpu[true], cpu[false], (cpu[true]/cpu[false]-1)*100),
		goal: "indexing ≤ +15 %", ts: ts,
		method: fmt.Sprintf("The `channel_send` load of 8 go-sdk clients (%d calls, a sentence each) on a fresh daemon of the binary as built "+
			"and on a fresh daemon of the same source built with `-tags benchnoindex` and without cgo, as `make build` builds (messages left out of the search index), "+
			"each twice (on, off, off, on) and averaged; daemon CPU per call from `/proc`, "+
			"counting, after the load, one search whose catch-up indexes the messages the background indexer had not reached yet.", cfg.calls)})
	return nil
}
