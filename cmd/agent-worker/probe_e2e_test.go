package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// readChannel pages through the whole channel of scope, oldest first.
func readChannel(t *testing.T, client *api.Client, scope string) []api.Message {
	t.Helper()
	var all []api.Message
	var since int64
	for {
		page, err := client.Peek(context.Background(), scope, 1000, since)
		if err != nil {
			t.Fatalf("peek %s after seq %d: %v", scope, since, err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		since = page[len(page)-1].Seq
	}
}

// The probe's crash check, kept: 8 senders post over HTTP while the daemon
// is killed with SIGKILL. Every message whose POST /send was answered 2xx
// must be in the channel after a restart, exactly once, with the seq and id
// it was acknowledged with; no message is stored twice; seqs stay a total
// order, each sender's messages in the order it sent them; and the inbox
// index agrees with the channel.
func TestE2EKill9DuringConcurrentSends(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	daemon := c.startDaemon()
	c.ok("new", "bob", "--backend", "external") // never run: its inbox only grows
	client := c.client()

	const senders, acksBeforeKill = 8, 400
	type ack struct {
		seq int64
		id  string
	}
	var (
		mu     sync.Mutex
		acked  = map[string]ack{} // content → what the daemon answered
		total  atomic.Int64
		killed atomic.Bool
		enough = make(chan struct{})
		once   sync.Once
		wg     sync.WaitGroup
	)
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				content := fmt.Sprintf("@bob s%d-%05d", s, n)
				m, err := client.Send(context.Background(), api.SendRequest{Target: "@global", Message: content})
				if err != nil {
					if !killed.Load() {
						t.Errorf("sender %d: send before the kill: %v", s, err)
					}
					return
				}
				if m.Content != content || m.Seq <= 0 || m.ID == "" {
					t.Errorf("sender %d: acknowledged as %+v", s, m)
				}
				mu.Lock()
				acked[content] = ack{m.Seq, m.ID}
				mu.Unlock()
				if total.Add(1) >= acksBeforeKill {
					once.Do(func() { close(enough) })
				}
			}
		}()
	}
	select {
	case <-enough:
	case <-time.After(2 * time.Minute):
		t.Fatalf("only %d sends acknowledged in 2 minutes", total.Load())
	}
	killed.Store(true)
	if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()
	wg.Wait() // each sender stops at its first refused send
	t.Logf("%d sends acknowledged before and during the kill", len(acked))

	c.startDaemon()
	client = c.client()
	msgs := readChannel(t, client, "@global")
	stored := map[string]int{}
	lastOf := map[string]int{} // sender → last n seen, for per-sender order
	var prev int64
	for _, m := range msgs {
		if m.Seq <= prev {
			t.Errorf("seq %d (%q) follows seq %d: not a total order", m.Seq, m.Content, prev)
		}
		prev = m.Seq
		stored[m.Content]++
		var s, n int
		if _, err := fmt.Sscanf(m.Content, "@bob s%d-%05d", &s, &n); err != nil {
			t.Errorf("unexpected message %q", m.Content)
			continue
		}
		key := fmt.Sprint(s)
		if last, ok := lastOf[key]; ok && n <= last {
			t.Errorf("sender %d's message %d stored after its message %d", s, n, last)
		}
		lastOf[key] = n
	}
	for content, count := range stored {
		if count != 1 {
			t.Errorf("%q stored %d times", content, count)
		}
	}
	byContent := map[string]api.Message{}
	for _, m := range msgs {
		byContent[m.Content] = m
	}
	lost := 0
	for content, a := range acked {
		m, ok := byContent[content]
		switch {
		case !ok:
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged message %q (seq %d) lost across kill -9", content, a.seq)
			}
		case m.Seq != a.seq || m.ID != a.id:
			t.Errorf("%q acknowledged as seq %d id %s, stored as seq %d id %s", content, a.seq, a.id, m.Seq, m.ID)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged messages lost", lost, len(acked))
	}
	t.Logf("%d messages stored (%d acknowledged, %d in flight at the kill)", len(msgs), len(acked), len(msgs)-len(acked))

	// The inbox index was written in the same transactions as the channel.
	if a := c.agent("bob"); a.InboxDepth != len(msgs) {
		t.Errorf("bob's inbox depth = %d, want %d (every stored message mentions him)", a.InboxDepth, len(msgs))
	}
	// The restarted daemon hands out seqs after every stored one.
	m, err := client.Send(context.Background(), api.SendRequest{Target: "@global", Message: "after the restart"})
	if err != nil || m.Seq <= prev {
		t.Errorf("send after restart = seq %d, %v; want a seq after %d", m.Seq, err, prev)
	}
	if out := c.ok("peek", "-n", "1"); !strings.Contains(out, "after the restart") {
		t.Errorf("peek after restart = %q", out)
	}
}
