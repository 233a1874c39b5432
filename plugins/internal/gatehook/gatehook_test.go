package gatehook

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// A gate file without the token gets it from the variable it names; a
// variable that is unset is an error, so the hook refuses.
func TestDaemonTokenFromEnv(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gate.json")
	body, err := GateFile(backend.MCPServer{URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret", "X-Run": "r1"}}, "TOK")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Daemon(path, func(k string) string { return map[string]string{"TOK": "s3cret"}[k] })
	if err != nil || d.URL != "http://127.0.0.1:1/mcp" || d.Headers["Authorization"] != "Bearer s3cret" || d.Headers["X-Run"] != "r1" {
		t.Errorf("Daemon = %+v, %v", d, err)
	}
	if _, err := Daemon(path, func(string) string { return "" }); err == nil {
		t.Error("an unset token variable was accepted")
	}
}

// The reader returns each refusal once, and a line still being written
// only when it is whole.
func TestReaderWholeLines(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "gate.json")
	r := NewReader(gate)
	if got := r.Next(); got != nil {
		t.Errorf("no file: %q", got)
	}
	if err := Note(gate, "first"); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(Refusals(gate), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`"sec`)
	if got := r.Next(); !slices.Equal(got, []string{"first"}) {
		t.Errorf("Next = %q, want [first]", got)
	}
	f.WriteString("ond\"\n")
	f.Close()
	if got := r.Next(); !slices.Equal(got, []string{"second"}) {
		t.Errorf("Next = %q, want [second]", got)
	}
	if got := r.Next(); got != nil {
		t.Errorf("Next again = %q, want nothing", got)
	}
}
