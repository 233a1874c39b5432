package store

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// benchTeam opens a store with a team of nine outside agents in
// global:main, the shape of the daemon's channel_send load.
func benchTeam(b *testing.B) *DB {
	b.Helper()
	db, err := Open(context.Background(), b.TempDir()+"/agent-worker.db", Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	for i := range 9 {
		if _, err := db.CreateAgent(context.Background(), Agent{Name: fmt.Sprintf("s%d", i), Workflow: "global", Tag: "main", Backend: "external"}); err != nil {
			b.Fatal(err)
		}
	}
	return db
}

func benchMessage(i int) NewMessage {
	to := fmt.Sprintf("s%d", i%8+1)
	return NewMessage{Workflow: "global", Tag: "main", Sender: "s0", Content: "@" + to + " ping", Recipients: []string{to}}
}

// BenchmarkAppendMessage is one channel message (row, inbox row, loop
// guard count) per transaction, one writer at a time.
func BenchmarkAppendMessage(b *testing.B) {
	db := benchTeam(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if _, err := db.AppendMessage(ctx, benchMessage(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendMessageParallel is the same with 8 concurrent senders,
// as under the MCP load: concurrent sends may share a commit.
func BenchmarkAppendMessageParallel(b *testing.B) {
	db := benchTeam(b)
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(4) // 8 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := db.AppendMessage(ctx, benchMessage(int(n.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAppendMessageIndex is what full-text indexing adds to a channel
// message: the send with and without the indexer, one sender and eight,
// with the process's CPU time per message (user + system, the background
// batches and the index's pages included, the last batch waited for)
// beside the wall time.
func BenchmarkAppendMessageIndex(b *testing.B) {
	for _, index := range []bool{false, true} {
		for _, senders := range []int{1, 8} {
			b.Run(fmt.Sprintf("index=%v/senders=%d", index, senders), func(b *testing.B) {
				benchNoMessageIndex = !index
				defer func() { benchNoMessageIndex = false }()
				db := benchTeam(b)
				ctx := context.Background()
				send := func(i int) error {
					m := benchMessage(i)
					m.Content += fmt.Sprintf(" — the migration of table %d is done, see the notes", i)
					_, err := db.AppendMessage(ctx, m)
					return err
				}
				var n atomic.Int64
				b.SetParallelism(senders / 2) // 2 cores
				b.ResetTimer()
				cpu0 := processCPU()
				if senders == 1 {
					for i := range b.N {
						if err := send(i); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := send(int(n.Add(1))); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				if err := db.indexMessages(ctx); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// processCPU is the user and system time the process has used.
func processCPU() time.Duration {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// BenchmarkSearch1M searches a channel of a million messages (ten words
// each from a vocabulary of 2,000, so a word is in about 5,000 messages;
// "zyzzyva" in one message of 10,000) and reports p50 and p99 per query.
//
// AGENT_WORKER_BENCH_SEARCH_DB=file keeps the seeded database in file and
// reuses it on the next run (seeding takes most of a minute).
func BenchmarkSearch1M(b *testing.B) {
	db := search1M(b, os.Getenv("AGENT_WORKER_BENCH_SEARCH_DB"))
	ctx := context.Background()
	for _, q := range []string{"zyzzyva", "w17x", "w17x w18x", `"w17x w18x"`, "w17*", "w1*", "w17x*"} {
		b.Run(q, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for range b.N {
				t0 := time.Now()
				if _, err := db.Search(ctx, Scope{Workflow: "global", Tag: "main"}, SearchOptions{Query: q, Limit: 20}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
		})
	}
}

// search1M is the million-message channel of BenchmarkSearch1M, seeded in
// a temporary file, or in path unless path already holds it.
func search1M(b *testing.B, path string) *DB {
	b.Helper()
	ctx := context.Background()
	if path != "" {
		if _, err := os.Stat(path); err == nil {
			db, err := Open(ctx, path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			return db
		}
	}
	const total, batch = 1_000_000, 20_000
	db := benchTeam(b)
	if path != "" {
		var err error
		if db, err = Open(ctx, path, Options{}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		for i := range 9 {
			if _, err := db.CreateAgent(ctx, Agent{Name: fmt.Sprintf("s%d", i), Workflow: "global", Tag: "main", Backend: "external"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	vocab := make([]string, 2000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx", i)
	}
	rnd := uint64(1)
	next := func() uint64 { rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17; return rnd }
	for n := 0; n < total; n += batch {
		ms := make([]NewMessage, batch)
		for j := range ms {
			words := make([]string, 10)
			for k := range words {
				words[k] = vocab[next()%uint64(len(vocab))]
			}
			if (n+j)%10_000 == 0 {
				words[3] = "zyzzyva"
			}
			ms[j] = NewMessage{Workflow: "global", Tag: "main", Sender: "s0", Content: strings.Join(words, " ")}
		}
		if _, err := db.AppendMessages(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
	// The searches measure searching, not the indexer's last batch.
	if err := db.indexMessages(ctx); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkReadInbox is what a run's start reads: the agent's unread
// messages (the inbox) and the channel's newest page, on a pooled
// connection whose prepared statements are reused.
func BenchmarkReadInbox(b *testing.B) {
	db := benchTeam(b)
	ctx := context.Background()
	for i := range 100 {
		if _, err := db.AppendMessage(ctx, benchMessage(i)); err != nil {
			b.Fatal(err)
		}
	}
	scope := Scope{Workflow: "global", Tag: "main"}
	b.ResetTimer()
	for i := range b.N {
		agent := fmt.Sprintf("s%d", i%8+1)
		if _, err := db.Inbox(ctx, AgentKey{Name: agent, Workflow: "global", Tag: "main"}, 20); err != nil {
			b.Fatal(err)
		}
		if _, err := db.ReadChannel(ctx, scope, ReadOptions{Viewer: agent, Limit: 20}); err != nil {
			b.Fatal(err)
		}
	}
}
