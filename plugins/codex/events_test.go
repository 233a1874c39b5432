package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// shownEvent is an Event as the golden files show it: zero fields left out.
type shownEvent struct {
	Kind      backend.EventKind `json:"kind"`
	Text      string            `json:"text,omitempty"`
	Tool      *backend.ToolCall `json:"tool,omitempty"`
	Usage     *backend.Usage    `json:"usage,omitempty"`
	SessionID string            `json:"session_id,omitempty"`
}

// parsed is what a JSONL sample turns into.
type parsed struct {
	Events    []shownEvent `json:"events"`
	Answer    string       `json:"answer,omitempty"`
	Outcome   string       `json:"outcome"`
	Permanent bool         `json:"permanent,omitempty"`
}

func parseSample(t *testing.T, data []byte) parsed {
	t.Helper()
	p := newParser()
	var out parsed
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		for _, e := range p.parse(sc.Bytes()) {
			out.Events = append(out.Events, shownEvent(e))
		}
	}
	out.Answer, out.Outcome = p.answer, "success"
	if err := p.outcome(); err != nil {
		out.Outcome, out.Permanent = err.Error(), backend.IsPermanent(err)
	}
	return out
}

// The samples in testdata/*.jsonl are what codex 0.169 printed against the
// scripted model (see the e2e test); each has a golden reading beside it.
func TestEventsGolden(t *testing.T) {
	t.Parallel()
	samples, _ := filepath.Glob("testdata/*.jsonl")
	if len(samples) == 0 {
		t.Fatal("no samples in testdata")
	}
	for _, sample := range samples {
		data, err := os.ReadFile(sample)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.MarshalIndent(parseSample(t, data), "", "  ")
		golden(t, strings.TrimSuffix(filepath.Base(sample), ".jsonl")+".golden.json", string(b)+"\n")
	}
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	const (
		started   = `{"type":"thread.started","thread_id":"t1"}`
		answer    = `{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"ok"}}`
		completed = `{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}`
		failedMCP = `{"type":"item.completed","item":{"id":"i2","type":"mcp_tool_call","server":"agent-worker","tool":"channel_send","arguments":{},"result":null,"error":{"message":"nope"},"status":"failed"}}`
		errorEv   = `{"type":"error","message":"Reconnecting... 1/2"}`
	)
	tests := map[string]struct {
		lines []string
		want  string // "" for success
	}{
		"answered":                        {[]string{started, answer, completed}, ""},
		"nothing to say":                  {[]string{started, completed}, ""},
		"failed MCP call, then an answer": {[]string{started, failedMCP, answer, completed}, ""},
		"failed MCP call, no answer":      {[]string{started, failedMCP, completed}, "channel_send: nope"},
		"never completed":                 {[]string{started, answer}, "without completing"},
		"an error, then recovered":        {[]string{started, errorEv, answer, completed}, ""},
		"an error at the end":             {[]string{started, answer, completed, errorEv}, "Reconnecting"},
		"not JSON":                        {[]string{"panic: oops"}, "without completing"},
	}
	for name, tc := range tests {
		got := parseSample(t, []byte(strings.Join(tc.lines, "\n")))
		if tc.want == "" && got.Outcome != "success" || tc.want != "" && !strings.Contains(got.Outcome, tc.want) {
			t.Errorf("%s: outcome %q, want %q", name, got.Outcome, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"unexpected status 401 Unauthorized: bad key":                    true,
		"Missing environment variable: `OPENAI_API_KEY`.":                true,
		"Error loading config.toml: unknown variant":                     true,
		"exceeded retry limit, last status: 429 Too Many Requests":       false,
		"Connection failed: error sending request":                       false,
		"We’re currently experiencing high demand, which may cause temp": false,
	}
	for msg, permanent := range tests {
		if got := backend.IsPermanent(classify(errString(msg))); got != permanent {
			t.Errorf("classify(%q) permanent = %v, want %v", msg, got, permanent)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }
