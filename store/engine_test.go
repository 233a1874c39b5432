package store

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A bare `LIMIT ?` makes SQLite prepare its statement again at every call
// (see engine.go): every LIMIT parameter in the store's SQL is `? + 0`.
func TestLimitParametersAreNotBare(t *testing.T) {
	bare := regexp.MustCompile(`(?i)\b(LIMIT|OFFSET)\s+\?[0-9]*(\s*[)` + "`" + `,]|\s*$)`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "//") && bare.MatchString(line) {
				t.Errorf("%s:%d: a bare LIMIT parameter re-prepares its statement at every call; write `LIMIT ? + 0`: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
