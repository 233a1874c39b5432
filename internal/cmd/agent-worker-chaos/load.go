package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// ack is what the daemon answered for an acknowledged message.
type ack struct {
	seq int64
	id  string
}

// failure is one send attempt that was not acknowledged: when it was
// made, when its answer (or error) came, and what kind of failure it was.
type failure struct {
	start, end time.Time
	kind       string // "HTTP 503", "HTTP 500", "refused", "eof", "timeout", …
}

// window is a stretch of time during which the store was down.
type window struct{ start, end time.Time }

// load is the senders of one scenario and the ledger of what they were
// told: POST /send, one HTTP request per attempt, exactly as `agent-worker
// send` makes it. The API has no idempotency key, so an attempt that was
// not acknowledged is never repeated with the same text: the next attempt
// of that message carries a new suffix (-a1, -a2, …). An unacknowledged
// attempt that was stored anyway is then "stored without ack", and a text
// stored twice can only be the daemon's doing.
type load struct {
	scenario string
	daemons  []*daemon
	agents   []string
	pace     time.Duration
	stop     chan struct{}
	wg       sync.WaitGroup

	// mu guards the fields that follow.
	mu        sync.Mutex
	acked     map[string]ack // text (from "chaos-") → its ack
	attempted map[string]bool
	failures  []failure
	outages   []window
}

// sendTimeout bounds one attempt. A store outage must be answered with 503
// at once; an attempt that hangs longer is a failure of its own kind.
const sendTimeout = 15 * time.Second

// startLoad starts senders goroutines posting to agents round-robin, the
// attempts of sender s spread over daemons from daemon s on.
func startLoad(scenario string, daemons []*daemon, agents []string, senders int, pace time.Duration) *load {
	l := &load{scenario: scenario, daemons: daemons, agents: agents, pace: pace, stop: make(chan struct{}),
		acked: map[string]ack{}, attempted: map[string]bool{}}
	for s := range senders {
		l.wg.Add(1)
		go l.sender(s)
	}
	return l
}

// halt stops the senders after their attempt in flight and waits for them.
func (l *load) halt() {
	close(l.stop)
	l.wg.Wait()
}

func (l *load) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// sender posts message after message; a message that is not acknowledged
// is tried again (with a new text, on the next daemon of a cluster) until
// it is or the load stops.
func (l *load) sender(s int) {
	defer l.wg.Done()
	hc := &http.Client{Timeout: sendTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	for n := 0; !l.stopped(); n++ {
		agent := l.agents[(s+n)%len(l.agents)]
		for a := 0; !l.stopped(); a++ {
			d := l.daemons[(s+a)%len(l.daemons)]
			if a > 0 {
				d.refresh() // it may have been restarted since: a new token
			}
			text := fmt.Sprintf("chaos-%s-s%d-m%d-a%d", l.scenario, s, n, a)
			l.mu.Lock()
			l.attempted[text] = true
			l.mu.Unlock()
			start := time.Now()
			m, kind := post(hc, d, agent, text)
			if kind == "" {
				l.mu.Lock()
				l.acked[text] = ack{m.Seq, m.ID}
				l.mu.Unlock()
				break
			}
			l.mu.Lock()
			l.failures = append(l.failures, failure{start, time.Now(), kind})
			l.mu.Unlock()
			select {
			case <-l.stop:
			case <-time.After(100 * time.Millisecond):
			}
		}
		select {
		case <-l.stop:
		case <-time.After(l.pace):
		}
	}
}

// post is one POST /send to agent (the daemon adds the @mention, as for
// `agent-worker send <agent> <text>`). It returns the message stored, or
// the kind of failure.
func post(hc *http.Client, d *daemon, agent, text string) (api.Message, string) {
	url, token := d.endpoint()
	body, _ := json.Marshal(api.SendRequest{Target: agent, Message: text})
	req, err := http.NewRequest(http.MethodPost, url+"/send", bytes.NewReader(body))
	if err != nil {
		return api.Message{}, "request: " + err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return api.Message{}, connKind(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return api.Message{}, connKind(err)
	}
	if resp.StatusCode != http.StatusCreated {
		return api.Message{}, fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	var m api.Message
	if err := json.Unmarshal(b, &m); err != nil || m.Seq <= 0 {
		return api.Message{}, "bad 201 body"
	}
	return m, ""
}

// connKind names a transport failure in a few words.
func connKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "conn: " + err.Error()
}

// beginOutage records that the store goes down now; the returned func
// records that it is back.
func (l *load) beginOutage() (end func()) {
	l.mu.Lock()
	i := len(l.outages)
	l.outages = append(l.outages, window{start: time.Now()})
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.outages[i].end = time.Now()
		l.mu.Unlock()
	}
}

// errorCounts sorts the failures into those whose attempt overlapped an
// outage (503, or anything else: a defect) and those outside, by kind.
func (l *load) errorCounts() (outage503, outageOther map[string]int, outside map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	outage503, outageOther, outside = map[string]int{}, map[string]int{}, map[string]int{}
	for _, f := range l.failures {
		in := false
		for _, w := range l.outages {
			if f.start.Before(w.end) && f.end.After(w.start) {
				in = true
				break
			}
		}
		switch {
		case in && f.kind == "HTTP 503":
			outage503[f.kind]++
		case in:
			outageOther[f.kind]++
		default:
			outside[f.kind]++
		}
	}
	return outage503, outageOther, outside
}

// kinds prints counts by kind, largest first: "refused 120, eof 3".
func kinds(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// ctxSleep waits d or until ctx ends.
func ctxSleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// ledger is what the senders were told and what they tried, once they
// have stopped.
func (l *load) ledger() (acked map[string]ack, attempted map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked, l.attempted
}
