package docprovidertest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
)

// Run runs every conformance test as a parallel subtest of t. Each subtest
// calls newProvider for a provider of its own with no documents, so
// newProvider must be safe to call concurrently (use t.TempDir) and should
// register its cleanup with t.Cleanup.
func Run(t *testing.T, newProvider func(t *testing.T) docprovider.Provider) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, docprovider.Provider)
	}{
		{"EmptyScopeListsNothing", testEmptyList},
		{"ReadMissingIsNotFound", testReadMissing},
		{"WriteThenRead", testWriteRead},
		{"Overwrite", testOverwrite},
		{"AppendCreatesThenConcatenates", testAppend},
		{"CreateExistingConflicts", testCreateExisting},
		{"CreateNew", testCreateNew},
		{"ListSortedWithSizes", testList},
		{"InvalidNamesRejected", testInvalidNames},
		{"SizeLimit", testSizeLimit},
		{"ScopesShareNothing", testScopeIsolation},
		{"ConcurrentAppendsLoseNothing", testConcurrentAppends},
		{"UnicodeRoundTrips", testUnicode},
		{"EmptyDocumentExists", testEmptyDocument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newProvider(t))
		})
	}
}

var scope = docprovider.Scope{Workflow: "review", Tag: "main"}

func ref(path string) docprovider.Ref {
	return docprovider.Ref{Workflow: scope.Workflow, Tag: scope.Tag, Path: path}
}

func mustWrite(t *testing.T, p docprovider.Provider, r docprovider.Ref, content string) {
	t.Helper()
	if err := p.Write(t.Context(), r, content); err != nil {
		t.Fatalf("Write %+v: %v", r, err)
	}
}

func mustRead(t *testing.T, p docprovider.Provider, r docprovider.Ref) string {
	t.Helper()
	got, err := p.Read(t.Context(), r)
	if err != nil {
		t.Fatalf("Read %+v: %v", r, err)
	}
	return got
}

// wantContent fails unless r holds exactly want.
func wantContent(t *testing.T, p docprovider.Provider, r docprovider.Ref, want string) {
	t.Helper()
	if got := mustRead(t, p, r); got != want {
		t.Errorf("Read %s = %q, want %q", r.Path, abbrev(got), abbrev(want))
	}
}

// wantClass fails unless err is of class want.
func wantClass(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want one of class %q", what, err, want)
	}
}

func mustList(t *testing.T, p docprovider.Provider, s docprovider.Scope) []docprovider.Info {
	t.Helper()
	got, err := p.List(t.Context(), s)
	if err != nil {
		t.Fatalf("List %+v: %v", s, err)
	}
	return got
}

// paths returns "path:size" for each entry, the part of a listing a test
// can predict.
func paths(infos []docprovider.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Path + ":" + strconv.FormatInt(in.Size, 10)
	}
	return out
}

func abbrev(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%s… (%d bytes)", s[:80], len(s))
	}
	return s
}

func testEmptyList(t *testing.T, p docprovider.Provider) {
	got := mustList(t, p, scope)
	if got == nil || len(got) != 0 {
		t.Errorf("List of an empty scope = %#v, want an empty non-nil slice", got)
	}
}

func testReadMissing(t *testing.T, p docprovider.Provider) {
	for _, path := range []string{"notes.md", "specs/none.md"} {
		_, err := p.Read(t.Context(), ref(path))
		wantClass(t, "Read "+path+" before any write", err, sdk.ErrNotFound)
	}
	mustWrite(t, p, ref("other.md"), "x")
	_, err := p.Read(t.Context(), ref("notes.md"))
	wantClass(t, "Read notes.md beside other.md", err, sdk.ErrNotFound)
}

func testWriteRead(t *testing.T, p docprovider.Provider) {
	mustWrite(t, p, ref("notes.md"), "# Plan\n\n- ship it\n")
	wantContent(t, p, ref("notes.md"), "# Plan\n\n- ship it\n")
	mustWrite(t, p, ref("specs/deep/api.md"), "nested")
	wantContent(t, p, ref("specs/deep/api.md"), "nested")
}

func testOverwrite(t *testing.T, p docprovider.Provider) {
	mustWrite(t, p, ref("notes.md"), "a long first version of the notes")
	mustWrite(t, p, ref("notes.md"), "short")
	wantContent(t, p, ref("notes.md"), "short")
}

func testAppend(t *testing.T, p docprovider.Provider) {
	ctx := t.Context()
	if err := p.Append(ctx, ref("log.txt"), "one\n"); err != nil {
		t.Fatalf("Append to a missing document: %v", err)
	}
	wantContent(t, p, ref("log.txt"), "one\n")
	if err := p.Append(ctx, ref("log.txt"), "two"); err != nil {
		t.Fatal(err)
	}
	wantContent(t, p, ref("log.txt"), "one\ntwo")
}

func testCreateExisting(t *testing.T, p docprovider.Provider) {
	mustWrite(t, p, ref("notes.md"), "keep me")
	err := p.Create(t.Context(), ref("notes.md"), "clobber")
	wantClass(t, "Create over an existing document", err, sdk.ErrConflict)
	if err != nil && !strings.Contains(err.Error(), "notes.md already exists") {
		t.Errorf("Create conflict message %q does not say %q", err, "notes.md already exists")
	}
	wantContent(t, p, ref("notes.md"), "keep me")
}

func testCreateNew(t *testing.T, p docprovider.Provider) {
	for _, path := range []string{"notes.md", "specs/new.md"} {
		if err := p.Create(t.Context(), ref(path), "fresh "+path); err != nil {
			t.Fatalf("Create %s: %v", path, err)
		}
		wantContent(t, p, ref(path), "fresh "+path)
	}
}

func testList(t *testing.T, p docprovider.Provider) {
	start := time.Now()
	docs := map[string]string{
		"notes.md":      "héllo", // 6 bytes, not 5 characters
		"specs/api.md":  "api",
		"specs-old.md":  "old!",
		"b.txt":         "",
		"a.json":        `{"a":1}`,
		"z/config.yaml": "k: v\n",
	}
	for path, content := range docs {
		mustWrite(t, p, ref(path), content)
	}
	if err := p.Append(t.Context(), ref("specs/api.md"), "++"); err != nil {
		t.Fatal(err)
	}
	got := mustList(t, p, scope)
	// Byte order: '-' (0x2d) sorts before '/' (0x2f).
	want := []string{"a.json:7", "b.txt:0", "notes.md:6", "specs-old.md:4", "specs/api.md:5", "z/config.yaml:5"}
	if !slices.Equal(paths(got), want) {
		t.Errorf("List = %v, want %v", paths(got), want)
	}
	for _, in := range got {
		if in.UpdatedAt.Before(start.Add(-time.Minute)) || in.UpdatedAt.After(time.Now().Add(time.Minute)) {
			t.Errorf("%s UpdatedAt = %v, want about now (%v)", in.Path, in.UpdatedAt, start)
		}
	}
}

// invalidPaths are names every provider must refuse before touching storage.
var invalidPaths = []string{
	"../x.md", "/etc/passwd.md", "a/../../b.md", "x.exe", ".hidden.md",
	"a//b.md", "a b.md", "notes.md/", "", strings.Repeat("a", 198) + ".md",
}

func testInvalidNames(t *testing.T, p docprovider.Provider) {
	ctx := t.Context()
	for _, path := range invalidPaths {
		r := ref(path)
		_, err := p.Read(ctx, r)
		wantClass(t, fmt.Sprintf("Read %q", path), err, sdk.ErrInvalid)
		wantClass(t, fmt.Sprintf("Write %q", path), p.Write(ctx, r, "x"), sdk.ErrInvalid)
		wantClass(t, fmt.Sprintf("Append %q", path), p.Append(ctx, r, "x"), sdk.ErrInvalid)
		wantClass(t, fmt.Sprintf("Create %q", path), p.Create(ctx, r, "x"), sdk.ErrInvalid)
	}
	for _, bad := range []docprovider.Scope{{Workflow: "..", Tag: "main"}, {Workflow: "review", Tag: "a/b"}, {}} {
		r := docprovider.Ref{Workflow: bad.Workflow, Tag: bad.Tag, Path: "notes.md"}
		wantClass(t, fmt.Sprintf("Write in scope %+v", bad), p.Write(ctx, r, "x"), sdk.ErrInvalid)
		_, err := p.Read(ctx, r)
		wantClass(t, fmt.Sprintf("Read in scope %+v", bad), err, sdk.ErrInvalid)
		_, err = p.List(ctx, bad)
		wantClass(t, fmt.Sprintf("List scope %+v", bad), err, sdk.ErrInvalid)
	}
	if got := mustList(t, p, scope); len(got) != 0 {
		t.Errorf("invalid names left documents behind: %v", paths(got))
	}
}

func testSizeLimit(t *testing.T, p docprovider.Provider) {
	ctx := t.Context()
	limit := strconv.Itoa(docprovider.MaxDocumentBytes)
	over := strings.Repeat("x", docprovider.MaxDocumentBytes+1)
	for op, err := range map[string]error{
		"Write":  p.Write(ctx, ref("big.md"), over),
		"Append": p.Append(ctx, ref("big.md"), over),
		"Create": p.Create(ctx, ref("big.md"), over),
	} {
		wantClass(t, op+" over the limit", err, sdk.ErrInvalid)
		if err != nil && !strings.Contains(err.Error(), limit) {
			t.Errorf("%s over the limit: message %q does not name the limit %s", op, err, limit)
		}
	}
	if _, err := p.Read(ctx, ref("big.md")); !errors.Is(err, sdk.ErrNotFound) {
		t.Errorf("a refused write created big.md (Read: %v)", err)
	}
	full := strings.Repeat("y", docprovider.MaxDocumentBytes)
	mustWrite(t, p, ref("full.md"), full)
	wantClass(t, "Append past the limit", p.Append(ctx, ref("full.md"), "z"), sdk.ErrInvalid)
	wantContent(t, p, ref("full.md"), full)
}

func testScopeIsolation(t *testing.T, p docprovider.Provider) {
	ctx := t.Context()
	scopes := []docprovider.Scope{scope, {Workflow: scope.Workflow, Tag: "pr-1"}, {Workflow: "other", Tag: scope.Tag}}
	at := func(s docprovider.Scope, path string) docprovider.Ref {
		return docprovider.Ref{Workflow: s.Workflow, Tag: s.Tag, Path: path}
	}
	mustWrite(t, p, at(scopes[0], "notes.md"), "main notes")
	for _, s := range scopes[1:] {
		if _, err := p.Read(ctx, at(s, "notes.md")); !errors.Is(err, sdk.ErrNotFound) {
			t.Errorf("Read notes.md in %+v = %v, want sdk.ErrNotFound: it sees another scope", s, err)
		}
		if got := mustList(t, p, s); len(got) != 0 {
			t.Errorf("List %+v = %v, want nothing", s, paths(got))
		}
		if err := p.Create(ctx, at(s, "notes.md"), s.Workflow+":"+s.Tag); err != nil {
			t.Errorf("Create notes.md in %+v: %v", s, err)
		}
		if err := p.Append(ctx, at(s, "only-"+s.Tag+".md"), "x"); err != nil {
			t.Fatal(err)
		}
	}
	wantContent(t, p, at(scopes[0], "notes.md"), "main notes")
	for _, s := range scopes[1:] {
		wantContent(t, p, at(s, "notes.md"), s.Workflow+":"+s.Tag)
		want := []string{"notes.md:" + strconv.Itoa(len(s.Workflow+":"+s.Tag)), "only-" + s.Tag + ".md:1"}
		if got := paths(mustList(t, p, s)); !slices.Equal(got, want) {
			t.Errorf("List %+v = %v, want %v", s, got, want)
		}
	}
	if got := paths(mustList(t, p, scopes[0])); !slices.Equal(got, []string{"notes.md:10"}) {
		t.Errorf("List %+v = %v, want only its own notes.md", scopes[0], got)
	}
}

func testConcurrentAppends(t *testing.T, p docprovider.Provider) {
	const writers, each = 20, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := p.Append(t.Context(), ref("log.md"), fmt.Sprintf("writer %02d line %02d\n", w, i)); err != nil {
					t.Errorf("Append: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for line := range strings.Lines(mustRead(t, p, ref("log.md"))) {
		seen[line]++
	}
	for w := range writers {
		for i := range each {
			line := fmt.Sprintf("writer %02d line %02d\n", w, i)
			if seen[line] != 1 {
				t.Errorf("line %q appears %d times, want once", strings.TrimSpace(line), seen[line])
			}
			delete(seen, line)
		}
	}
	for line := range seen {
		t.Errorf("unexpected line %q: appends interleaved", line)
	}
}

func testUnicode(t *testing.T, p docprovider.Provider) {
	text := "héllo wörld — 日本語 🎉\n\ttab\r\nend\x00nul"
	mustWrite(t, p, ref("unicode.md"), text)
	wantContent(t, p, ref("unicode.md"), text)
	if err := p.Append(t.Context(), ref("unicode.md"), "ß✓"); err != nil {
		t.Fatal(err)
	}
	wantContent(t, p, ref("unicode.md"), text+"ß✓")
}

func testEmptyDocument(t *testing.T, p docprovider.Provider) {
	mustWrite(t, p, ref("empty.md"), "")
	wantContent(t, p, ref("empty.md"), "")
	wantClass(t, "Create over an empty document", p.Create(t.Context(), ref("empty.md"), "x"), sdk.ErrConflict)
	if got := paths(mustList(t, p, scope)); !slices.Equal(got, []string{"empty.md:0"}) {
		t.Errorf("List = %v, want [empty.md:0]", got)
	}
}
