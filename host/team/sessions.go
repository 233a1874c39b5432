package team

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// HookDeliveryLimit bounds the messages one hook hands a Claude Code
// session: a session that was away long gets the newest and the number of
// older ones, not a flood in its context.
const HookDeliveryLimit = 20

// SessionEfforts is what a live session's hooks need of the agent's
// effort beyond the store: host/efforts and host/gate (which import this
// package), wired by host. Nil: a session records no evidence and gets no
// directives.
type SessionEfforts interface {
	// ToolUsed records a session's tool call as a run's would be seen:
	// evidence for the phase (a Bash call without an exit status proves
	// nothing), the directories it touched, the effort's heartbeat.
	ToolUsed(ctx context.Context, k store.AgentKey, runID, cwd string, call backend.ToolCall)
	// Directives are the effort's directive files not brought into its
	// context before (each once, shared with daemon runs).
	Directives(ctx context.Context, k store.AgentKey) ([]api.SessionDirective, error)
	// LastLogEntry is the newest entry of e's log ("" for none).
	LastLogEntry(e store.Effort) string
}

// chainSources are the SessionStart sources that continue an earlier
// context window of the agent: Claude Code's compaction and --resume.
var chainSources = []string{"compact", "resume"}

// Hook acts for the Claude Code session that calls a hook as agent k
// (issue 30). Only an external agent may be attached: the daemon runs
// every other backend itself, and two actors would answer as one agent.
// Every event but SessionEnd attaches the session (or moves its
// heartbeat); SessionStart, UserPromptSubmit and PostToolUse hand it the
// unread messages; Stop hands them over too, asking Claude not to stop
// while some wait, unless a Stop hook already held it (StopHookActive),
// so a session is never held twice in a row; SessionEnd detaches it.
//
// Each session is also a context window (issue 44, store.LiveSession):
// SessionStart chains it to the agent's previous session when it is a
// compaction or a resume, or while an effort is in flight, and hands it
// the dehydration payload that one left (or, without one, a fresh one
// built from it); PreCompact stores the payload; UserPromptSubmit and
// PostToolUse keep the prompt and the tool call in the session's
// transcript; PostToolUse records the files it read, the evidence and the
// directories its call touched, and hands it the directive files found
// there.
func (s *Service) Hook(ctx context.Context, k store.AgentKey, call api.HookCall) (api.HookDelivery, error) {
	if !api.ValidHookEvent(call.Event) {
		return api.HookDelivery{}, api.Errorf(api.CodeInvalid, "unknown hook event %q: want one of %v", call.Event, api.HookEvents)
	}
	if call.SessionID == "" {
		return api.HookDelivery{}, api.Errorf(api.CodeInvalid, "the hook input has no session_id")
	}
	a, err := s.db.GetAgent(ctx, k)
	if err != nil {
		return api.HookDelivery{}, err
	}
	target := api.Target{Agent: k.Name, Workflow: k.Workflow, Tag: k.Tag}.Display()
	switch {
	case a.Backend != "external":
		return api.HookDelivery{}, api.Errorf(api.CodeConflict,
			"%s has backend %s, so the daemon runs it: a Claude Code session can act only as an agent with backend external (agent-worker new NAME --backend external)",
			target, a.Backend)
	case a.State == api.AgentStopped:
		return api.HookDelivery{}, api.Errorf(api.CodeConflict, "%s is stopped: start its workflow again to attach a session", target)
	}
	out := api.HookDelivery{Agent: target, Workflow: k.Workflow, Tag: k.Tag}
	if call.Event == api.HookSessionEnd {
		if _, err := s.db.EndLiveSession(ctx, call.SessionID); err != nil {
			return out, err
		}
		if ok, err := s.db.DetachSession(ctx, k, call.SessionID); err != nil || ok {
			s.log.Info("session detached", "agent", k.String(), "session", call.SessionID, "error", err)
			return out, err
		}
		return out, nil
	}
	if _, err := s.db.HeartbeatSession(ctx, k, call.SessionID, call.Cwd); err != nil {
		return api.HookDelivery{}, err
	}
	eff, inFlight, err := s.db.ActiveEffort(ctx, k)
	if err != nil {
		return api.HookDelivery{}, err
	}
	if call.Event == api.HookSessionStart {
		o := store.SessionOpening{ID: call.SessionID, Cwd: call.Cwd, Chain: inFlight || slices.Contains(chainSources, call.Source)}
		if inFlight {
			o.EffortID = eff.ID
		}
		if _, _, err := s.db.OpenLiveSession(ctx, k, o); err != nil {
			return api.HookDelivery{}, err
		}
	}
	beat := store.SessionBeat{Cwd: call.Cwd, ContextTokens: call.ContextTokens}
	if f := readFile(call); f != "" {
		beat.Loaded = []string{f}
	}
	ls, err := s.db.BeatLiveSession(ctx, k, call.SessionID, beat)
	if err != nil {
		return api.HookDelivery{}, err
	}
	switch call.Event {
	case api.HookSessionStart:
		s.log.Info("session attached", "agent", k.String(), "session", call.SessionID, "cwd", call.Cwd, "source", call.Source, "prev", ls.Prev)
		members, err := s.Members(ctx, store.Scope{Workflow: k.Workflow, Tag: k.Tag})
		if err != nil {
			return api.HookDelivery{}, err
		}
		out.System = a.System
		for _, m := range members {
			out.Members = append(out.Members, api.Member{Name: m.Name, State: m.State})
		}
		if out.Resume, out.ResumeFrom, err = s.resume(ctx, k, ls, inFlight); err != nil {
			return api.HookDelivery{}, err
		}
		if out.Directives, err = s.directives(ctx, k); err != nil {
			return api.HookDelivery{}, err
		}
	case api.HookUserPromptSubmit:
		if err := s.transcribe(ctx, ls, userPromptEvent(call.Prompt)); err != nil {
			return api.HookDelivery{}, err
		}
	case api.HookPostToolUse:
		tc := backend.ToolCall{Name: call.ToolName, Args: call.ToolInput, Result: call.ToolResult}
		if err := s.transcribe(ctx, ls, toolEvents(tc)...); err != nil {
			return api.HookDelivery{}, err
		}
		if s.Efforts != nil && call.ToolName != "" {
			s.Efforts.ToolUsed(ctx, k, ls.RunID, call.Cwd, tc)
		}
		if out.Directives, err = s.directives(ctx, k); err != nil {
			return api.HookDelivery{}, err
		}
	case api.HookPreCompact:
		payload, err := s.Payload(ctx, k, ls, call.LastAssistant)
		if err != nil {
			return api.HookDelivery{}, err
		}
		s.log.Info("session dehydrated", "agent", k.String(), "session", call.SessionID, "bytes", len(payload))
		return out, s.db.DehydrateLiveSession(ctx, call.SessionID, payload)
	case api.HookStop:
		if call.StopHookActive {
			return out, nil
		}
	}
	ms, omitted, err := s.db.DeliverInbox(ctx, k, HookDeliveryLimit)
	if err != nil {
		return api.HookDelivery{}, err
	}
	out.Messages, out.Omitted = APIMessages(ms), omitted
	out.Block = call.Event == api.HookStop && len(ms) > 0
	return out, nil
}

// resume is the payload a starting session ls gets: the one stored for
// it (by its own PreCompact, or the one of the session it continues),
// each given once; else, for a session that continues another while an
// effort is in flight, one built now from that session.
func (s *Service) resume(ctx context.Context, k store.AgentKey, ls store.LiveSession, inFlight bool) (payload, from string, err error) {
	payload, from, ok, err := s.db.TakeDehydration(ctx, ls.ID)
	if err != nil || ok || ls.Prev == "" || !inFlight {
		return payload, from, err
	}
	prev, err := s.db.GetLiveSession(ctx, ls.Prev)
	if err != nil {
		return "", "", err
	}
	payload, err = s.Payload(ctx, k, prev, "")
	return payload, prev.ID, err
}

func (s *Service) directives(ctx context.Context, k store.AgentKey) ([]api.SessionDirective, error) {
	if s.Efforts == nil {
		return nil, nil
	}
	return s.Efforts.Directives(ctx, k)
}

// transcribe adds events to the session's transcript.
func (s *Service) transcribe(ctx context.Context, ls store.LiveSession, evs ...store.RunEvent) error {
	return s.db.AppendLiveSessionEvents(ctx, ls.ID, evs)
}

func userPromptEvent(prompt string) store.RunEvent {
	b, _ := json.Marshal(map[string]string{"text": prompt, "from": "interactive session"})
	return store.RunEvent{Kind: store.RunEventUserPrompt, Data: string(b), At: time.Now()}
}

// toolEvents are a session's tool call as a run's transcript holds one:
// the call, then its result.
func toolEvents(tc backend.ToolCall) []store.RunEvent {
	now := time.Now()
	call, res := tc, tc
	call.Result = ""
	res.Args = nil
	cb, _ := json.Marshal(call)
	rb, _ := json.Marshal(res)
	return []store.RunEvent{{Kind: string(backend.EventToolCall), Data: string(cb), At: now},
		{Kind: string(backend.EventToolResult), Data: string(rb), At: now}}
}

// readFile is the file a PostToolUse's Read call loaded, absolute ("" for
// none).
func readFile(call api.HookCall) string {
	if call.Event != api.HookPostToolUse || call.ToolName != "Read" {
		return ""
	}
	var in struct {
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(call.ToolInput, &in) != nil || in.FilePath == "" {
		return ""
	}
	p := in.FilePath
	if !filepath.IsAbs(p) {
		if !filepath.IsAbs(call.Cwd) {
			return ""
		}
		p = filepath.Join(call.Cwd, p)
	}
	return filepath.Clean(p)
}

// Bounds of a dehydration payload. The whole is at most PayloadChars
// characters: it goes into the next session's SessionStart context with
// the team's introduction, and Claude Code cuts a hook's output at 10,000.
const (
	PayloadChars      = 6000
	payloadProof      = 1200 // the proof so far
	payloadNotes      = 1200 // the notes, newest kept
	payloadSaid       = 800  // what the agent said it would do next
	payloadFiles      = 30   // loaded files named, newest (the rest counted)
	payloadFilesChars = 1500 // characters of their names
	payloadMessages   = 8    // the team's last messages
	payloadMessageCh  = 240  // characters of each message
)

// Payload is what session ls hands the context window that continues it
// (its dehydration): the effort, its phase, the proof and notes so far,
// the files the session loaded, the team's last messages and what the
// agent said it would do next (said, else the effort log's last entry),
// at most PayloadChars characters.
func (s *Service) Payload(ctx context.Context, k store.AgentKey, ls store.LiveSession, said string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "## Where you left off (agent-worker session %s of %s, %s)\n", ls.ID, k.Name, time.Now().UTC().Format(time.RFC3339))
	eff, inFlight, err := s.db.ActiveEffort(ctx, k)
	if err != nil {
		return "", err
	}
	if inFlight {
		fmt.Fprintf(&b, "Effort %s: skill %s #%d on %s, phase %d of %d: %s. Resume at this phase: call effort_status for its instructions and token.\n",
			eff.ID, eff.Skill, eff.Ordinal, eff.Dir, eff.Phase+1, len(eff.Phases), eff.PhaseName)
		r, err := s.db.ResumeEffort(ctx, eff.ID)
		if err != nil {
			return "", err
		}
		hist, err := s.db.EffortHistory(ctx, eff.ID)
		if err != nil {
			return "", err
		}
		var proofs []string
		for _, c := range hist {
			if len(c.Proof) > 2 { // not "{}"
				proofs = append(proofs, c.PhaseName+": "+string(c.Proof))
			}
		}
		if len(proofs) > 0 {
			b.WriteString("Proof so far: " + tail(strings.Join(proofs, "; "), payloadProof) + "\n")
		}
		var notes []string
		for _, c := range r.Notes {
			notes = append(notes, "["+c.PhaseName+"] "+c.Notes)
		}
		if len(notes) > 0 {
			b.WriteString("Notes: " + tail(strings.Join(notes, " "), payloadNotes) + "\n")
		}
		if said == "" && s.Efforts != nil {
			said = s.Efforts.LastLogEntry(eff)
		}
	} else {
		b.WriteString("No effort in flight.\n")
	}
	if said = strings.TrimSpace(said); said != "" {
		b.WriteString("What you said you would do next: " + api.OneLine(said, payloadSaid) + "\n")
	}
	if n := len(ls.Loaded); n > 0 {
		// The newest files, as many as fit.
		var files []string
		size := 0
		for i := n - 1; i >= 0 && len(files) < payloadFiles && size+len(ls.Loaded[i]) <= payloadFilesChars; i-- {
			files = append(files, ls.Loaded[i])
			size += len(ls.Loaded[i]) + 2
		}
		slices.Reverse(files)
		fmt.Fprintf(&b, "Files you had read (%d): %s", n, strings.Join(files, ", "))
		if len(files) < n {
			fmt.Fprintf(&b, " and %d earlier", n-len(files))
		}
		b.WriteString("\n")
	}
	ms, err := s.db.ReadChannel(ctx, k.Scope(), store.ReadOptions{Viewer: k.Name, Limit: payloadMessages})
	if err != nil {
		return "", err
	}
	if len(ms) > 0 {
		b.WriteString("The team's last messages:\n")
		for _, m := range ms {
			fmt.Fprintf(&b, "[#%d %s] %s\n", m.Seq, m.Sender, api.OneLine(m.Content, payloadMessageCh))
		}
	}
	return cutPayload(b.String()), nil
}

// tail is the last n characters of s, marked as cut.
func tail(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n:])
}

// cutPayload bounds a payload at PayloadChars characters.
func cutPayload(s string) string {
	const mark = "\n[cut: the payload is bounded]"
	r := []rune(s)
	if len(r) <= PayloadChars {
		return s
	}
	return string(r[:PayloadChars-len([]rune(mark))]) + mark
}

// GateRefused records that the gate refused a tool call of live session
// sessionID of k: a gate event (the reason) in the session's transcript,
// as a daemon run's refusal is one of its run's, and on the bus. A
// session the daemon has no row of, or another agent's, only gets the bus
// event: the refusal stands either way.
func (s *Service) GateRefused(ctx context.Context, k store.AgentKey, sessionID, tool, args, reason string) {
	s.Bus.Publish(Event{Kind: EventGate, Agent: k, Tool: &ToolInfo{Name: tool, Args: args}, State: sessionID, Error: reason})
	if sessionID == "" {
		return
	}
	ls, err := s.db.GetLiveSession(ctx, sessionID)
	if err != nil || ls.Agent != k {
		return
	}
	b, _ := json.Marshal(map[string]string{"text": reason})
	if err := s.transcribe(ctx, ls, store.RunEvent{Kind: string(backend.EventGate), Data: string(b), At: time.Now()}); err != nil {
		s.log.Warn("record a session's gate refusal", "session", sessionID, "error", err)
	}
}
