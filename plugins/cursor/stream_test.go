package cursor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/streams")

// Each testdata/streams/*.jsonl is a cursor-agent stdout; its .golden is
// the events it becomes, one JSON object a line, and how the run ends.
func TestStreamGolden(t *testing.T) {
	t.Parallel()
	inputs, _ := filepath.Glob("testdata/streams/*.jsonl")
	if len(inputs) == 0 {
		t.Fatal("no samples under testdata/streams")
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var s stream
			var got bytes.Buffer
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				for _, e := range s.parse(sc.Bytes()) {
					got.Write(eventJSON(e))
					got.WriteByte('\n')
				}
			}
			fmt.Fprintf(&got, "end: %v\n", s.err())
			golden := strings.TrimSuffix(in, ".jsonl") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("events of %s (-want +got):\n%s", in, diff)
			}
		})
	}
}

// eventJSON renders an event without its zero fields.
func eventJSON(e backend.Event) []byte {
	m := map[string]any{"kind": e.Kind}
	if e.Text != "" {
		m["text"] = e.Text
	}
	if e.SessionID != "" {
		m["session"] = e.SessionID
	}
	if e.Tool != nil {
		m["tool"] = e.Tool
	}
	if e.Usage != nil {
		m["usage"] = e.Usage
	}
	b, _ := json.Marshal(m)
	return b
}

func TestStreamEndings(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		lines []string
		want  string // "" for success
	}{
		"success":          {[]string{`{"type":"result","subtype":"success","result":"ok","session_id":"s"}`}, ""},
		"nothing":          {nil, "ended without a result"},
		"error result":     {[]string{`{"type":"result","subtype":"error","is_error":true,"result":"quota"}`}, "quota"},
		"is_error success": {[]string{`{"type":"result","subtype":"success","is_error":true,"result":"odd"}`}, "odd"},
		"blank line only":  {[]string{""}, "ended without a result"},
	} {
		var s stream
		for _, l := range tc.lines {
			s.parse([]byte(l))
		}
		err := s.err()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}

// A result without text falls back to the last assistant message, and an
// error result is never reported as the run's answer.
func TestStreamResultText(t *testing.T) {
	t.Parallel()
	var s stream
	s.parse([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"final words"}]}}`))
	got := s.parse([]byte(`{"type":"result","subtype":"success","result":"","session_id":"s"}`))
	if len(got) != 2 || got[1].Kind != backend.EventResult || got[1].Text != "final words" {
		t.Errorf("events = %+v", got)
	}
	var f stream
	for _, e := range f.parse([]byte(`{"type":"result","subtype":"error","is_error":true,"result":"boom"}`)) {
		if e.Kind == backend.EventResult {
			t.Errorf("an error result became an EventResult: %+v", e)
		}
	}
}
