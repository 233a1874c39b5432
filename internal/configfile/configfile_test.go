package configfile

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/peterbourgon/ff/v3"

	"github.com/agent-worker/agent-worker/host/api"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// flags are a few of the daemon's, of each kind its config file sets.
type flags struct {
	fs            *flag.FlagSet
	listen        string
	maxConcurrent int
	poll          time.Duration
	logJSON       bool
	pluginDirs    list
}

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func parse(t *testing.T, args ...string) (*flags, error) {
	t.Helper()
	f := &flags{fs: flag.NewFlagSet("daemon", flag.ContinueOnError)}
	f.fs.StringVar(&f.listen, "listen", "127.0.0.1:5099", "")
	f.fs.IntVar(&f.maxConcurrent, "max-concurrent", 0, "")
	f.fs.DurationVar(&f.poll, "poll-interval", time.Minute, "")
	f.fs.BoolVar(&f.logJSON, "log-json", false, "")
	f.fs.Var(&f.pluginDirs, "plugins-dir", "")
	f.fs.String("spares", "", "")
	f.fs.String("tls-cert", "", "")
	f.fs.String("config", "", "")
	err := ff.Parse(f.fs, args, ff.WithConfigFileFlag("config"), ff.WithConfigFileParser(Parser(f.fs, "config")))
	return f, err
}

// TestProblems compares what a bad file reports with testdata/NAME.golden:
// every problem at once, each as FILE:LINE, an unknown key with the flag
// it most likely meant.
func TestProblems(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"problems", "syntax", "list", "syntax_tab", "syntax_quote", "syntax_indent", "duplicate"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := parse(t, "--config", filepath.Join("testdata", name+".yaml"))
			if err == nil {
				t.Fatal("no error")
			}
			if api.ErrorCode(err) != api.CodeInvalid {
				t.Errorf("code %s, want invalid (exit 2)", api.ErrorCode(err))
			}
			got := err.Error() + "\n"
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/configfile -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
			}
		})
	}
}

// A good file sets every flag it names, a list each item of a repeatable
// flag; the command line wins over the file.
func TestGood(t *testing.T) {
	t.Parallel()
	f, err := parse(t, "--config", "testdata/good.yaml", "--max-concurrent", "8")
	if err != nil {
		t.Fatal(err)
	}
	got := []any{f.listen, f.maxConcurrent, f.poll, f.logJSON, []string(f.pluginDirs)}
	want := []any{"127.0.0.1:6000", 8, 90 * time.Second, true, []string{"/opt/a", "/opt/b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
	if _, err := parse(t, "--config", "testdata/empty.yaml"); err != nil {
		t.Errorf("empty file: %v", err)
	}
}
