package store

import (
	"fmt"
	"testing"
)

// A document's versions are found by seq: as it was after each message,
// absent before it was made, unknown past the versions kept.
func TestDocumentAt(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	scope := Scope{"team", "main"}
	createTeam(t, db, scope, "alice")
	send := func(text string) int64 {
		t.Helper()
		m, err := db.AppendMessage(ctx, NewMessage{Workflow: scope.Workflow, Tag: scope.Tag, Sender: "user", Content: text})
		if err != nil {
			t.Fatal(err)
		}
		return m.Seq
	}
	s1 := send("one")
	if err := db.IndexDocument(ctx, scope, "plan.md", "v1"); err != nil {
		t.Fatal(err)
	}
	s2 := send("two")
	if err := db.IndexDocument(ctx, scope, "plan.md", "v2"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		seq    int64
		want   string
		wantAt DocAt
	}{{s1 - 1, "", DocAbsent}, {s1, "v1", DocFound}, {s2, "v2", DocFound}, {s2 + 100, "v2", DocFound}} {
		got, at, err := db.DocumentAt(ctx, scope, "plan.md", c.seq)
		if err != nil || got != c.want || at != c.wantAt {
			t.Errorf("DocumentAt(seq %d) = %q, %v, %v; want %q, %v", c.seq, got, at, err, c.want, c.wantAt)
		}
	}
	if _, at, err := db.DocumentAt(ctx, scope, "never.md", s2); err != nil || at != DocUnknown {
		t.Errorf("a document with no versions: %v, %v; want unknown", at, err)
	}
	// Only the newest versions are kept: past them, unknown.
	for i := range maxDocVersions + 5 {
		if err := db.IndexDocument(ctx, scope, "log.md", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			send("three")
		}
	}
	if _, at, err := db.DocumentAt(ctx, scope, "log.md", s2); err != nil || at != DocUnknown {
		t.Errorf("past the versions kept: %v, %v; want unknown", at, err)
	}
}
