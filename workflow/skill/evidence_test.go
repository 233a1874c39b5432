package skill

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const evidenceSkill = `name: ev
description: evidence under test
phases:
  - name: verify
    evidence:
      - {shell: "go test ./...", exit: 0}
      - {file: "*_test.go"}
      - {tool: "doc_*"}
      - {shell: "make lint", exit: 2}
      - {shell: "go  generate *", exit: any}
`

// TestEvidence pins which observations meet which requirement: a command's
// exit status counts only when it is the command's own.
func TestEvidence(t *testing.T) {
	t.Parallel()
	ph := mustParse(t, evidenceSkill).Phase("verify")
	shell := func(cmd string, exit int) Observation {
		return Observation{Kind: EvidenceShell, Command: cmd, Exit: exit}
	}
	tests := map[string]struct {
		obs  Observation
		want []int // indexes of the requirements met
	}{
		"go test green":         {shell("go test ./...", 0), []int{0}},
		"go test red":           {shell("go test ./...", 1), nil},
		"other packages":        {shell("go test ./pkg/...", 0), nil},
		"in an && chain":        {shell("cd sub && go test ./...", 0), []int{0}},
		"full path":             {shell("/usr/local/go/bin/go test ./...", 0), []int{0}},
		"with env":              {shell("GOFLAGS=-count=1 go test ./...", 0), []int{0}},
		"piped: tail's status":  {shell("go test ./... 2>&1 | tail -20", 0), nil},
		"after ;":               {shell("go test ./...; true", 0), nil},
		"or true":               {shell("go test ./... || true", 0), nil},
		"quoted in echo":        {shell("echo 'go test ./...'", 0), nil},
		"test file":             {Observation{Kind: EvidenceFile, Path: "pkg/x/y_test.go"}, []int{1}},
		"not a test file":       {Observation{Kind: EvidenceFile, Path: "pkg/x/y.go"}, nil},
		"a shell is not a file": {shell("touch y_test.go", 0), nil},
		"tool":                  {Observation{Kind: EvidenceTool, Tool: "mcp__agent-worker__doc_write"}, []int{2}},
		"exit 2 alone":          {shell("make lint", 2), []int{3}},
		"exit 2 in a chain":     {shell("cd x && make lint", 2), nil},
		"any exit":              {shell("go generate ./... | cat", 1), []int{4}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got []int
			for i, f := range ph.CheckEvidence([]Observation{tt.obs}) {
				if f.By != nil {
					got = append(got, i)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("met (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEvidenceErr pins the message that says what a phase still lacks.
func TestEvidenceErr(t *testing.T) {
	t.Parallel()
	ph := mustParse(t, evidenceSkill).Phase("verify")
	fs := ph.CheckEvidence([]Observation{
		{Kind: EvidenceShell, Command: "go test ./... | tail", Exit: 0},
		{Kind: EvidenceFile, Path: "a_test.go"},
		{Kind: EvidenceTool, Tool: "doc_read"},
		{Kind: EvidenceShell, Command: "make lint", Exit: 2},
	})
	err := fs.Err("verify")
	want := "verify needs a shell command matching `go test ./...` that exited 0 (alone or in a chain joined by &&, not in a pipeline or after ; or ||) in this phase; the last was `go test ./... | tail`, whose exit status is not the command's own\n" +
		"verify needs a shell command matching `go generate *` to have run in this phase; none was observed"
	if err == nil || err.Error() != want {
		t.Errorf("Err =\n%v\nwant\n%s", err, want)
	}
	var ee *EvidenceError
	if !errors.As(err, &ee) || len(ee.Missing) != 2 {
		t.Errorf("Err is %T %+v, want an *EvidenceError with 2 missing", err, ee)
	}
	if fs[1].By == nil || fs[1].By.Path != "a_test.go" {
		t.Errorf("the file requirement was met by %+v", fs[1].By)
	}
	// A red run is named with its status; a later green one meets it.
	red := []Observation{{Kind: EvidenceShell, Command: "go test ./...", Exit: 1}, {Kind: EvidenceShell, Command: "make lint", Exit: 0}}
	err = ph.CheckEvidence(red).Err("verify")
	for _, want := range []string{"the last was `go test ./...`, which exited 1", "the last was `make lint`, which exited 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("after a red go test and a green make lint: %v; want it to say %q", err, want)
		}
	}
	if f := ph.CheckEvidence(append(red, Observation{Kind: EvidenceShell, Command: "go test ./...", Exit: 0}))[0]; f.By == nil || f.Ran != nil {
		t.Errorf("red then green: %+v, want met by the green one", f)
	}
	all := ph.CheckEvidence([]Observation{
		{Kind: EvidenceShell, Command: "go test ./...", Exit: 0}, {Kind: EvidenceFile, Path: "a_test.go"},
		{Kind: EvidenceTool, Tool: "doc_read"}, {Kind: EvidenceShell, Command: "make lint", Exit: 2},
		{Kind: EvidenceShell, Command: "go generate ./...", Exit: 3},
	})
	if err := all.Err("verify"); err != nil {
		t.Errorf("all met: %v", err)
	}
}
