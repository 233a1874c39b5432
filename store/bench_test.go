package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
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
