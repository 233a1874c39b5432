package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/internal/testkit"
)

// realCLI returns the path of a real agent CLI (claude, codex). Without it
// the test is skipped, saying how to get it, unless AGENT_WORKER_E2E_CLIS=1
// (set by make test-e2e, which installs the pinned CLIs): then it fails.
func realCLI(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("AGENT_WORKER_E2E_CLIS") == "1" {
			t.Fatalf("AGENT_WORKER_E2E_CLIS=1 but the %s CLI is not on PATH: %v", name, err)
		}
		t.Skipf("%s CLI not on PATH: run make test-e2e", name)
	}
	return path
}

// model is a scripted model server (Anthropic and OpenAI APIs) in a helper
// process.
type model struct {
	URL   string
	stdin io.WriteCloser
	lines chan string // the helper's stdout
}

// modelTurn is a fakemodel.Turn as JSON.
type modelTurn map[string]any

// modelRequest is one request the model received.
type modelRequest struct {
	Path    string
	Header  http.Header
	Body    map[string]any
	RawBody []byte
}

// startModel starts the model helper with turns; a held one answers no
// model request until the test ends.
func startModel(t *testing.T, held bool, turns ...modelTurn) *model {
	t.Helper()
	// A process of its own: this package may not import
	// plugins/internal/fakemodel.
	bin := testkit.Build(t, "plugins/internal/fakemodel/fakemodeld")
	if turns == nil {
		turns = []modelTurn{}
	}
	script, _ := json.Marshal(map[string]any{"turns": turns, "held": held})
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "AGENT_WORKER_FAKEMODEL="+string(script))
	cmd.Stderr = os.Stderr
	m := &model{lines: make(chan string, 16)}
	var err error
	if m.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(m.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			m.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		m.stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	m.URL = strings.TrimPrefix(m.next(t, "url "), "url ")
	return m
}

// next returns the helper's next line starting with prefix.
func (m *model) next(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-m.lines:
			if !ok {
				t.Fatalf("the model helper ended before saying %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			t.Fatalf("the model helper did not say %q within 30s", prefix)
		}
	}
}

// add scripts another turn.
func (m *model) add(t *testing.T, turn modelTurn) {
	t.Helper()
	b, _ := json.Marshal(turn)
	if _, err := fmt.Fprintf(m.stdin, "add %s\n", b); err != nil {
		t.Fatal(err)
	}
}

// requests returns the model requests received so far.
func (m *model) requests(t *testing.T) []modelRequest {
	t.Helper()
	if _, err := io.WriteString(m.stdin, "requests\n"); err != nil {
		t.Fatal(err)
	}
	var reqs []modelRequest
	if err := json.Unmarshal([]byte(strings.TrimPrefix(m.next(t, "requests "), "requests ")), &reqs); err != nil {
		t.Fatal(err)
	}
	return reqs
}
