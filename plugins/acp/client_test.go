package acp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
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
