package team

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agent-worker/agent-worker/store"
)

// A dehydration payload stays within PayloadChars however much the
// session read, the team said and the agent wrote last, and a small one
// is whole: the files read, what it said it would do next, the team's
// last messages.
func TestPayloadBound(t *testing.T) {
	t.Parallel()
	svc, db, _ := boardTeam(t, "alice", "me")
	ctx := t.Context()
	me := store.AgentKey{Name: "me", Workflow: board.Workflow, Tag: board.Tag}
	for i := range 30 {
		if _, err := db.AppendMessage(ctx, store.NewMessage{Workflow: board.Workflow, Tag: board.Tag, Sender: "alice",
			Content: fmt.Sprintf("MSG-%d %s", i, strings.Repeat("é", 2000))}); err != nil {
			t.Fatal(err)
		}
	}
	var loaded []string
	for i := range store.MaxLoadedFiles {
		loaded = append(loaded, fmt.Sprintf("/src/%s/file%d.go", strings.Repeat("d", 200), i))
	}
	big := store.LiveSession{ID: "s1", Agent: me, Loaded: loaded}
	p, err := svc.Payload(ctx, me, big, strings.Repeat("NEXT ", 20000))
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(p); n > PayloadChars || !utf8.ValidString(p) {
		t.Errorf("a full session's payload is %d characters (valid UTF-8: %v), want at most %d", n, utf8.ValidString(p), PayloadChars)
	}
	for _, want := range []string{"session s1 of me", "No effort in flight", fmt.Sprintf("Files you had read (%d)", store.MaxLoadedFiles), "What you said you would do next: NEXT"} {
		if !strings.Contains(p, want) {
			t.Errorf("the bounded payload lacks %q", want)
		}
	}

	small := store.LiveSession{ID: "s2", Agent: me, Loaded: []string{"/src/a.go"}}
	p, err = svc.Payload(ctx, me, small, "write the plan")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Files you had read (1): /src/a.go", "What you said you would do next: write the plan", "MSG-29", "MSG-22"} {
		if !strings.Contains(p, want) {
			t.Errorf("the payload lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "MSG-21 ") || strings.Contains(p, "[cut:") {
		t.Errorf("the payload has more than the team's last %d messages, or is cut:\n%s", payloadMessages, p)
	}
}

// A live session's refused tool call is a gate event of the session's
// transcript, with the reason, as a daemon run's is; another agent's
// session id gets nothing written.
func TestGateRefusedIsInTheSessionTranscript(t *testing.T) {
	t.Parallel()
	svc, db, _ := boardTeam(t, "alice", "me")
	ctx := t.Context()
	me := store.AgentKey{Name: "me", Workflow: board.Workflow, Tag: board.Tag}
	alice := store.AgentKey{Name: "alice", Workflow: board.Workflow, Tag: board.Tag}
	ls, _, err := db.OpenLiveSession(ctx, me, store.SessionOpening{ID: "sess-g", Cwd: "/src/p"})
	if err != nil {
		t.Fatal(err)
	}
	svc.GateRefused(ctx, me, "sess-g", "Edit", "/src/p/main.go", "phase plan of skill implement does not allow Edit")
	svc.GateRefused(ctx, alice, "sess-g", "Edit", "/src/p/x.go", "alice's refusal")
	_, evs, err := db.GetRun(ctx, ls.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var gates []string
	for _, e := range evs {
		if e.Kind == "gate" {
			gates = append(gates, e.Data)
		}
	}
	if len(gates) != 1 || !strings.Contains(gates[0], "does not allow Edit") {
		t.Fatalf("gate events of the session's transcript: %q, want the one refusal of me", gates)
	}
}
