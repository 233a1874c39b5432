package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The seed's own file loads as it is: `context: {provider: file,
// documentOwner: x}` reads like `documents:`.
func TestSeedExampleLoadsVerbatim(t *testing.T) {
	t.Parallel()
	f, err := Load("testdata/seed/review.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := Context{Documents: "file", DocumentOwner: "reviewer"}
	if diff := cmp.Diff(want, f.Context); diff != "" || f.Name != "seed-review" || len(f.Agents) != 2 {
		t.Errorf("name %q, %d agents, context (-want +got):\n%s", f.Name, len(f.Agents), diff)
	}
}

func TestContextForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const agents = "agents: {a: {backend: mock}}\n"
	tests := map[string]struct {
		context string
		want    Context
		tag     string // resolve under this tag; "" = main
		wantErr string
	}{
		"seed provider sqlite":   {context: "{provider: sqlite, documentOwner: a}", want: Context{Documents: "sqlite", DocumentOwner: "a"}},
		"seed provider file":     {context: "{provider: file}", want: Context{Documents: "file"}},
		"documents scalar":       {context: "{documents: sqlite}", want: Context{Documents: "sqlite"}},
		"documents dir":          {context: "{documents: {provider: file, dir: ./my-docs/}}", want: Context{Documents: "file", DocsDir: filepath.Join(dir, "my-docs")}},
		"absolute dir":           {context: "{documents: {provider: file, dir: /srv/docs}}", want: Context{Documents: "file", DocsDir: "/srv/docs"}},
		"dir with tag":           {context: "{documents: {provider: file, dir: 'docs/${{ workflow.tag }}'}}", tag: "pr-42", want: Context{Documents: "file", DocsDir: filepath.Join(dir, "docs", "pr-42")}},
		"seed config dir":        {context: "{provider: file, config: {dir: ./ctx}}", want: Context{Documents: "file", DocsDir: filepath.Join(dir, "ctx", "documents")}},
		"seed config bind":       {context: "{provider: file, config: {bind: '.ctx/${{ workflow.tag }}/'}}", tag: "pr-42", want: Context{Documents: "file", DocsDir: filepath.Join(dir, ".ctx", "pr-42", "documents")}},
		"no provider":            {context: "{documentOwner: a}", want: Context{DocumentOwner: "a"}},
		"folder, no provider":    {context: "{config: {dir: ./ctx}}", want: Context{Documents: "file", DocsDir: filepath.Join(dir, "ctx", "documents")}},
		"provider and documents": {context: "{provider: file, documents: sqlite}", wantErr: "wf.yaml:2:21: provider and documents both name the documents provider"},
		"dir and bind":           {context: "{config: {dir: a, bind: b}}", wantErr: "dir and bind are two ways to name the context folder: keep one"},
		"dir twice":              {context: "{documents: {provider: file, dir: a}, config: {dir: b}}", wantErr: "the documents folder is given twice (documents.dir at line 2)"},
		"sqlite with dir":        {context: "{documents: {provider: sqlite, dir: ./docs}}", wantErr: "a documents folder only applies to the file provider"},
		"config not a map":       {context: "{config: ./ctx}", wantErr: "context.config must be a map"},
		"unknown config key":     {context: "{config: {dri: x}}", wantErr: `unknown key "dri" in context.config: did you mean dir?`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse(filepath.Join(dir, "wf.yaml"), []byte(agents+"context: "+tc.context+"\n"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			in, err := Resolve(f, Vars{Tag: tc.tag})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, in.Context); diff != "" {
				t.Errorf("context (-want +got):\n%s", diff)
			}
		})
	}
}

// Names are checked for length before anything else, with the limit in the
// message and without echoing 10,000 characters back, even where YAML
// itself refuses a key that long.
func TestNameTooLong(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 10000)
	tests := map[string]struct{ src, want string }{
		"agent, block":     {"agents:\n  " + long + ":\n    backend: mock\n", `wf.yaml:2: agent name "aaaa`},
		"agent, 100 chars": {"agents:\n  " + long[:100] + ":\n    backend: mock\n", `wf.yaml:2:3: agent name "aaaa`},
		"agent, flow":      {"agents: {" + long + ": {backend: mock}}\n", `wf.yaml:1: agent name "aaaa`},
		"other key":        {"agents:\n  a:\n    " + long + ": 1\n", `wf.yaml:3: key "aaaa`},
		"workflow name":    {"name: " + long + "\nagents: {a: {backend: mock}}\n", `wf.yaml:1:7: workflow name "aaaa`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("wf.yaml", []byte(tc.src))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error = %.300v, want one starting %q", err, tc.want)
			}
			n := "10000"
			if name == "agent, 100 chars" {
				n = "100"
			}
			if msg := err.Error(); !strings.Contains(msg, "is "+n+" characters; ") || !strings.Contains(msg, "at most 64") || len(msg) > 400 {
				t.Errorf("error = %.500q (%d bytes), want the length, the limit 64 and no whole name", msg, len(msg))
			}
		})
	}
}

func TestCheckNames(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err  error
		want string
	}{
		"agent ok":       {CheckAgentName("code-reviewer_2"), ""},
		"agent 64":       {CheckAgentName("a" + strings.Repeat("b", 63)), ""},
		"agent 65":       {CheckAgentName("a" + strings.Repeat("b", 64)), "is 65 characters; at most 64"},
		"agent empty":    {CheckAgentName(""), "agent name is empty"},
		"agent digit":    {CheckAgentName("9lives"), `agent name "9lives" is not valid`},
		"agent reserved": {CheckAgentName("ALL"), `agent name "ALL" is reserved`},
		"tag ok":         {CheckScopeName("tag", "pr-42.v2"), ""},
		"tag long":       {CheckScopeName("tag", strings.Repeat("t", 70)), "tag name \"tttt"},
		"tag bad":        {CheckScopeName("tag", "a b"), `tag name "a b" is not valid`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if tc.want == "" && tc.err != nil || tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)) {
				t.Errorf("error = %v, want %q", tc.err, tc.want)
			}
		})
	}
}

// Every file the workflow names is refused over its limit, with the file
// named, and a source with no end (a device) is not read past the limit.
func TestSizeLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := strings.Repeat("x", MaxFileBytes+1)

	path := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(path, []byte("agents: {a: {backend: mock}}\n#"+big), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	var se *SizeError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &se) || !strings.Contains(err.Error(), "workflow file "+path+" is 1048607 bytes; the limit is 1 MiB") {
		t.Errorf("Load of a 1 MiB+ file: %v", err)
	}

	// Only a regular file is read: a device or a FIFO (whose open would
	// block until a writer comes) is refused at once (issue 27).
	if _, err := ReadFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "workflow file /dev/zero is not a regular file (a device)") {
		t.Errorf("ReadFile(/dev/zero) = %v, want it refused as a device without reading it", err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(fifo); err == nil || !strings.Contains(err.Error(), "is not a regular file (a FIFO): give the path of a file") {
		t.Errorf("Load of a FIFO = %v, want it refused at once", err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "prompt.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(filepath.Join(dir, "wf.yaml"), []byte("agents:\n  a:\n    backend: mock\n    system_prompt: prompt.md\n")); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO as a system_prompt file = %v, want it refused at once", err)
	}

	if err := os.WriteFile(filepath.Join(dir, "huge.md"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Parse(filepath.Join(dir, "wf.yaml"), []byte("agents:\n  a:\n    backend: mock\n    system_prompt: huge.md\n"))
	if want := "wf.yaml:4:20: system_prompt file huge.md is 1048577 bytes; the limit is 1 MiB"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("prompt file over the limit: %v, want %q", err, want)
	}

	// A setup result can make a small prompt huge: caught when resolved,
	// at the agent's line.
	f, err := Parse(filepath.Join(dir, "wf.yaml"), []byte("agents:\n  a:\n    backend: mock\n    system_prompt: 'Review ${{ diff }}'\nsetup: [{shell: git diff, as: diff}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(f, Vars{Setup: map[string]string{"diff": big}})
	if want := "wf.yaml:2: agent a's system_prompt (with its ${{ }} values filled in) is 1048584 bytes; the limit is 1 MiB"; !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), want) {
		t.Errorf("resolved prompt over the limit: %v, want %q", err, want)
	}
}
