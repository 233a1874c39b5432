package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current parser")

// golden is what a stream-json sample turns into.
type golden struct {
	Events    []goldenEvent `json:"events"`
	Err       string        `json:"err,omitempty"`
	Permanent bool          `json:"permanent,omitempty"`
	Init      bool          `json:"init"`
}

// goldenEvent is a backend.Event without its empty fields.
type goldenEvent struct {
	Kind      backend.EventKind `json:"kind"`
	Text      string            `json:"text,omitempty"`
	Tool      *backend.ToolCall `json:"tool,omitempty"`
	Usage     *backend.Usage    `json:"usage,omitempty"`
	SessionID string            `json:"session_id,omitempty"`
}

// Each testdata/*.jsonl is a stream-json sample (tool_call, stale_session
// and max_turns are verbatim from claude 2.1.197); its .golden holds the
// events and outcome it must produce.
func TestStreamGolden(t *testing.T) {
	t.Parallel()
	samples, _ := filepath.Glob("testdata/*.jsonl")
	if len(samples) == 0 {
		t.Fatal("no samples in testdata")
	}
	for _, sample := range samples {
		name := strings.TrimSuffix(filepath.Base(sample), ".jsonl")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(sample)
			if err != nil {
				t.Fatal(err)
			}
			var got golden
			s := newStream(backend.EventsFunc(func(e backend.Event) error {
				got.Events = append(got.Events, goldenEvent(e))
				return nil
			}))
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if len(bytes.TrimSpace(sc.Bytes())) == 0 {
					continue // cli.Run skips blank lines too
				}
				if err := s.line(sc.Bytes()); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.err(); err != nil {
				got.Err, got.Permanent = err.Error(), backend.IsPermanent(err)
			}
			got.Init = s.init
			// Compared in their file form, so that tool arguments (raw
			// JSON) compare alike.
			gotJSON, _ := json.MarshalIndent(got, "", "  ")
			path := strings.TrimSuffix(sample, ".jsonl") + ".golden"
			if *update {
				if err := os.WriteFile(path, append(gotJSON, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got = golden{}
			if err := json.Unmarshal(gotJSON, &got); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			var want golden
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", sample, diff)
			}
		})
	}
}

// Every stdout line is an event, so that the daemon's idle timer sees a
// chatty CLI alive, and a failed Send stops the parse.
func TestStreamEveryLineSends(t *testing.T) {
	t.Parallel()
	n := 0
	s := newStream(backend.EventsFunc(func(backend.Event) error { n++; return nil }))
	for _, l := range []string{`{"type":"system","subtype":"hook"}`, `{"type":"rate_limit_event"}`, `{"type":"user","message":{"content":"hi"}}`, `not json`} {
		before := n
		if err := s.line([]byte(l)); err != nil || n == before {
			t.Errorf("line %s: err %v, sent %d events", l, err, n-before)
		}
	}
	failing := newStream(backend.EventsFunc(func(backend.Event) error { return os.ErrClosed }))
	if err := failing.line([]byte(`{"type":"system","subtype":"init","session_id":"s"}`)); err == nil {
		t.Error("a failed Send was not returned")
	}
}
