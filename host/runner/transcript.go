package runner

import (
	"encoding/json"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// maxPromptMessage bounds one inbox message in a run's prompt event. A
// message longer than a workflow's long-content limit is already a short
// stub pointing at a resource, so this only bites on odd limits.
const maxPromptMessage = 8 << 10

// addPrompt records, as the transcript's first event, what the run is
// given: the agent's system prompt and the inbox it is shown. The daemon
// never builds the prompt itself (the worker does), so this is its raw
// material, the same for every backend.
func (r *recorder) addPrompt(system string, until int64, inbox []store.Message) {
	p := api.PromptEvent{System: cut(system, maxTextEvent/2), InboxUntilSeq: until, Inbox: []contract.PromptMessage{}}
	for _, m := range inbox {
		p.Inbox = append(p.Inbox, contract.PromptMessage{Seq: m.Seq, From: m.Sender, To: m.To, Content: cut(m.Content, maxPromptMessage)})
	}
	data, _ := json.Marshal(p)
	for len(data) > maxTextEvent && len(p.Inbox) > 0 {
		// The newest messages matter as much as the oldest; say what is
		// left out rather than store a flood.
		p.Inbox, p.Omitted = p.Inbox[:len(p.Inbox)-1], p.Omitted+1
		data, _ = json.Marshal(p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	r.pending = append(r.pending, store.RunEvent{N: r.n, Kind: api.RunEventPrompt, Data: string(data), At: time.Now()})
	r.texts = append(r.texts, "")
}

// maxContextEvent bounds a run's recorded context: the channel tail and
// notes.md can be long, and a replay needs them whole.
const maxContextEvent = 4 * maxTextEvent

// addContext records what the run is shown at its start beside its
// inbox (the channel tail, notes.md, the document list, its effort), so
// that `runs replay` shows a replay the same. A context too large to keep
// is recorded as its size; nil records nothing.
func (r *recorder) addContext(rc *backend.RunContext) {
	if rc == nil {
		return
	}
	data, _ := json.Marshal(rc)
	if len(data) > maxContextEvent {
		data, _ = json.Marshal(map[string]int{"truncated": len(data)})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	r.pending = append(r.pending, store.RunEvent{N: r.n, Kind: contract.RunEventContext, Data: string(data), At: time.Now()})
	r.texts = append(r.texts, "")
}

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// liveRuns tells followers of a run's transcript (GET
// /runs/{id}/events?follow=true) when new events are stored and when the
// run has ended. A follower is only nudged: it reads the events from the
// store, so it can neither miss one nor see one twice, and a slow follower
// holds up nothing.
type liveRuns struct {
	// mu guards runs.
	mu   sync.Mutex
	runs map[string]*liveRun
}

type liveRun struct {
	ended    chan struct{}
	watchers map[chan struct{}]struct{}
}

func (l *liveRuns) begin(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[string]*liveRun{}
	}
	l.runs[id] = &liveRun{ended: make(chan struct{}), watchers: map[chan struct{}]struct{}{}}
}

// changed nudges every follower of run id; a follower already nudged
// keeps its one pending nudge.
func (l *liveRuns) changed(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.runs[id]; r != nil {
		for w := range r.watchers {
			select {
			case w <- struct{}{}:
			default:
			}
		}
	}
}

// end tells the followers of run id that its end is recorded.
func (l *liveRuns) end(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.runs[id]; r != nil {
		close(r.ended)
		delete(l.runs, id)
	}
}

// WatchRun follows run id while it runs: changed receives a value after
// new events of the run are stored, ended is closed once the run's end is
// recorded. live is false when the run is not running in this daemon
// (finished, or unknown); the caller then reads the store, which is final.
// stop releases the watch.
func (s *Supervisor) WatchRun(id string) (changed, ended <-chan struct{}, stop func(), live bool) {
	l := &s.live
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.runs[id]
	if r == nil {
		return nil, nil, func() {}, false
	}
	w := make(chan struct{}, 1)
	r.watchers[w] = struct{}{}
	return w, r.ended, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(r.watchers, w)
	}, true
}
