package acp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agent-worker/agent-worker/sdk/backendtest"
)

// fs/read_text_file of a file that is not there answers ACP's resource
// not found (-32002, "Resource not found"): Gemini CLI's write_file reads
// the file first and takes only that answer (or ENOENT in the message)
// for a new file; any other error fails the write.
func TestReadTextFileMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "there.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &client{roots: []root{{path: dir, write: true}}, alive: func() {}}
	tests := map[string]struct {
		path    string
		code    int
		message string
	}{
		"missing":           {filepath.Join(dir, "main.go"), codeResourceNotFound, "Resource not found"},
		"missing directory": {filepath.Join(dir, "new", "main.go"), codeResourceNotFound, "Resource not found"},
		"a directory":       {dir, -32603, "Internal error"},
		"outside":           {"/etc/hostname", -32602, "Invalid params"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := c.ReadTextFile(context.Background(), acpsdk.ReadTextFileRequest{Path: tc.path})
			var re *acpsdk.RequestError
			if !errors.As(err, &re) || re.Code != tc.code || re.Message != tc.message {
				t.Errorf("ReadTextFile(%s) = %v, want code %d %q", tc.path, err, tc.code, tc.message)
			}
		})
	}
	resp, err := c.ReadTextFile(context.Background(), acpsdk.ReadTextFileRequest{Path: filepath.Join(dir, "there.txt")})
	if err != nil || resp.Content != "one\ntwo\n" {
		t.Errorf("ReadTextFile of a file there = %q, %v", resp.Content, err)
	}
}

// Config fs: false offers the agent no client file system (Gemini CLI
// then writes new files itself, inside the run's sandbox); by default
// both methods are offered.
func TestConfigFS(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		extra map[string]any
		want  bool
	}{
		"default":  {nil, true},
		"fs true":  {map[string]any{"fs": true}, true},
		"fs false": {map[string]any{"fs": false}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := backendtest.NewDaemon(t)
			d.Post("user", "@carol hello")
			a := agentRun{script: []map[string]any{{"text": "hi"}}, extra: tc.extra}
			_, recs, err := a.run(t, timeout(t), d.Request("carol"))
			if err != nil {
				t.Fatal(err)
			}
			init, ok := find(recs, "initialize")
			var p acpsdk.InitializeRequest
			if !ok || json.Unmarshal(init.Params, &p) != nil {
				t.Fatalf("no initialize recorded: %+v", recs)
			}
			if fs := p.ClientCapabilities.Fs; fs.ReadTextFile != tc.want || fs.WriteTextFile != tc.want {
				t.Errorf("clientCapabilities.fs = %+v, want both %v", fs, tc.want)
			}
		})
	}
}
