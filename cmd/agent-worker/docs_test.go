package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/internal/testkit"
)

// The pages a new user reads first are run, so that they cannot rot: the
// ```console blocks of docs/getting-started.md and of README.md become
// testscript scripts, run against the race-built agent-worker and plugins
// of TestMain, on mock backends only.
//
// What a page may hold, and how each part is read:
//
//   - a ```console block is a terminal session: a line "$ CMD" is a
//     command that must exit 0, and the lines up to the next "$" are
//     output of it that must appear, in any order, in what it printed on
//     stdout or stderr. "…" in an output line stands for anything (ids,
//     times, ports), and a run of spaces for any run of spaces (table
//     columns); an output line of only "…" checks nothing.
//   - "run_…" in a command is the newest run the daemon knows, which the
//     page has just shown with `agent-worker runs`.
//   - a fenced block whose first line is "# file: NAME" is written to NAME
//     in the session's directory before the first command.
//   - every other block (```sh: install commands, `make run`, real
//     backends) is for the reader only.
//
// Commands are read the way a shell reads them, which the test checks
// rather than assumes: words, single quotes and a trailing " # comment"
// only. A command with anything else a shell would read differently from
// testscript (double quotes, $, pipes, redirections, globs, ~) fails the
// test, to be rewritten.

// guides are the pages whose sessions TestE2EGettingStarted runs, and the
// example folders each one's session may use by its path in a checkout.
var guides = map[string][]string{
	"docs/getting-started.md": nil,
	"README.md":               {"examples/code-review"},
}

func TestE2EGettingStarted(t *testing.T) {
	root := filepath.Join("..", "..")
	scripts := t.TempDir()
	var files []string
	for page, examples := range guides {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		script, err := guideScript(string(text))
		if err != nil {
			t.Fatalf("%s: %v", page, err)
		}
		for _, dir := range examples {
			script += examplesTxtar(t, root, dir)
		}
		name := filepath.Join(scripts, strings.TrimSuffix(filepath.Base(page), ".md")+".txtar")
		if err := os.WriteFile(name, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	slices.Sort(files)
	testscript.Run(t, sessionParams(files))
}

// TestScripts runs the CLI sessions of testdata/script: what a user types
// and sees, one txtar per behaviour, with the same setup as the guides'
// sessions (a HOME of their own, a daemon on a free port, race reports
// read).
func TestScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata/script: %v", err)
	}
	testscript.Run(t, sessionParams(files))
}

// sessionParams is how a session runs: HOME is the session's own; the
// daemon's home is the default under it, outside $WORK, where the
// workflow files are (a run's sandbox may not hold the daemon's home).
// $AW_HOME is that home, $PLUGINS the plugins.d of the test's builds.
func sessionParams(files []string) testscript.Params {
	return testscript.Params{
		Files: files,
		Setup: func(e *testscript.Env) error {
			tb := e.T().(testing.TB)
			home, races := tb.TempDir(), tb.TempDir()
			e.Setenv("HOME", home)
			e.Setenv("AW_HOME", filepath.Join(home, ".agent-worker"))
			e.Setenv("AGENT_WORKER_HOME", filepath.Join(home, ".agent-worker"))
			e.Setenv("AGENT_WORKER_LISTEN", "127.0.0.1:0")
			e.Setenv("AGENT_WORKER_PLUGINS_DIR", pluginsDir)
			e.Setenv("PLUGINS", pluginsDir)
			e.Setenv("PATH", filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
			e.Setenv(testParent, os.Getenv(testParent)) // its daemons end with this test process
			if testkit.Race {
				e.Setenv("GORACE", "log_path="+filepath.Join(races, "race")+" atexit_sleep_ms=0")
			}
			env := slices.Clone(e.Vars)
			e.Defer(func() {
				// A session ends with stop --all; this is for one that
				// failed before it got there, in the default home and in
				// any other home it made in HOME.
				homes, _ := filepath.Glob(filepath.Join(home, "*", api.DaemonFile))
				for _, f := range homes {
					stopDaemonOf(tb, filepath.Dir(f), env)
				}
				raceReports(tb, races)
			})
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"output":    cmdOutput,
			"latestrun": cmdLatestRun,
			"freeaddr":  cmdFreeAddr,
		},
	}
}

// stopDaemonOf stops the daemon of home, if one runs, as the page does.
func stopDaemonOf(t testing.TB, home string, env []string) {
	if _, err := api.ReadDaemonInfo(home); err != nil {
		return
	}
	cmd := exec.Command(binary, "stop", "--all", "--home", home)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("agent-worker stop --all: %v\n%s", err, out)
	}
}

// raceReports fails the test with each report the race detector wrote in
// a command or daemon of the session, as cli.checkRaces does.
func raceReports(t testing.TB, dir string) {
	reports, _ := filepath.Glob(filepath.Join(dir, "race.*"))
	for _, r := range reports {
		b, _ := os.ReadFile(r)
		t.Errorf("the race detector reported in process %s:\n%s", strings.TrimPrefix(filepath.Ext(r), "."), b)
	}
}

// cmdOutput is `output REGEXP`: the last command printed a line matching
// REGEXP on stdout or stderr, as a terminal shows both.
func cmdOutput(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: output REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[0])
	ts.Check(err)
	out := ts.ReadFile("stdout") + ts.ReadFile("stderr")
	if !re.MatchString(out) {
		ts.Fatalf("no line matching %q in the output", args[0])
	}
}

// cmdFreeAddr is `freeaddr NAME`: it sets $NAME to a loopback address
// (127.0.0.1:port) that nothing listens on, for a session that needs a
// known port free whatever else the machine runs.
func cmdFreeAddr(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeaddr NAME")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	ts.Setenv(args[0], ln.Addr().String())
	ts.Check(ln.Close())
}

// cmdLatestRun is `latestrun`: it sets $RUN to the id of the newest run.
func cmdLatestRun(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: latestrun")
	}
	ts.Check(ts.Exec("agent-worker", "runs", "-n", "1", "--json"))
	var list api.RunList
	ts.Check(json.Unmarshal([]byte(ts.ReadFile("stdout")), &list))
	if len(list.Runs) == 0 {
		ts.Fatalf("no runs yet: run_… has nothing to stand for")
	}
	ts.Setenv("RUN", list.Runs[0].ID)
}

// block is one fenced code block of a page.
type block struct {
	lang  string
	line  int // of the opening fence
	lines []string
}

// fencedBlocks returns the page's fenced code blocks in order.
func fencedBlocks(page string) []block {
	var out []block
	var cur *block
	for i, l := range strings.Split(page, "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &block{lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), line: i + 1}
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		}
	}
	return out
}

// guideScript turns a page into a testscript: its files, then its console
// sessions, command by command with their output checks.
func guideScript(page string) (string, error) {
	var cmds, files strings.Builder
	sessions := 0
	for _, b := range fencedBlocks(page) {
		if len(b.lines) > 0 {
			if name, ok := strings.CutPrefix(strings.TrimSpace(b.lines[0]), "# file: "); ok {
				fmt.Fprintf(&files, "-- %s --\n%s\n", name, strings.Join(b.lines, "\n"))
				continue
			}
		}
		if b.lang != "console" {
			continue
		}
		sessions++
		for i, l := range b.lines {
			at := fmt.Sprintf("line %d", b.line+1+i)
			if cmd, ok := strings.CutPrefix(l, "$ "); ok {
				words, err := shellWords(cmd)
				if err != nil {
					return "", fmt.Errorf("%s: %v", at, err)
				}
				fmt.Fprintf(&cmds, "\n# %s: %s\n", at, cmd)
				cmds.WriteString(scriptCommand(words))
				continue
			}
			if re := outputRegexp(l); re != "" {
				fmt.Fprintf(&cmds, "output %s\n", quoteScript(re))
			}
		}
	}
	if sessions == 0 {
		return "", fmt.Errorf("no ```console block: nothing to run")
	}
	return cmds.String() + files.String(), nil
}

// scriptCommand is the testscript line(s) for one command of the page.
func scriptCommand(words []string) string {
	if words[0] == "cd" {
		return "cd " + quoteWords(words[1:]) + "\n"
	}
	if slices.Contains(words, "run_…") {
		for i, w := range words {
			if w == "run_…" {
				words[i] = "$RUN"
			}
		}
		return "latestrun\nexec " + strings.Join(quoteAllBut(words, "$RUN"), " ") + "\n"
	}
	return "exec " + quoteWords(words) + "\n"
}

func quoteWords(words []string) string {
	return strings.Join(quoteAllBut(words, ""), " ")
}

func quoteAllBut(words []string, keep string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		if w == keep {
			out[i] = w
			continue
		}
		out[i] = quoteScript(w)
	}
	return out
}

// quoteScript quotes a word for testscript: single quotes keep it whole
// and literal, and a quote inside is doubled.
func quoteScript(w string) string {
	return "'" + strings.ReplaceAll(w, "'", "''") + "'"
}

// shellWords splits a command as sh would, refusing what sh would read
// differently from its plain words (expansions, pipes, redirections,
// globs, double quotes), so the page shows a command a reader can paste.
func shellWords(cmd string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			i = len(cmd) // a comment to the end of the line
		case strings.IndexByte("\"$`|&;<>()*?[]{}~\\!", c) >= 0:
			return nil, fmt.Errorf("%q: %q outside single quotes reads differently in sh and in the test: quote it, or leave the command out of the console block", cmd, c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("%q: unterminated single quote", cmd)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("a $ line with no command")
	}
	return words, nil
}

// outputRegexp is the pattern an output line of the page asks for, or ""
// for a line that checks nothing.
func outputRegexp(line string) string {
	line = strings.TrimSpace(line)
	if line == "" || strings.Trim(line, "…") == "" {
		return ""
	}
	parts := strings.Split(line, "…")
	for i, p := range parts {
		fields := strings.Fields(p)
		for j, f := range fields {
			fields[j] = regexp.QuoteMeta(f)
		}
		s := strings.Join(fields, `\s+`)
		if strings.HasPrefix(p, " ") && i > 0 {
			s = `\s+` + s
		}
		if strings.HasSuffix(p, " ") && i < len(parts)-1 {
			s += `\s+`
		}
		parts[i] = s
	}
	return strings.Join(parts, ".*")
}

// examplesTxtar copies a folder of the checkout into the script's files
// (the page runs it by its path there), leaving out what runs leave
// behind (.workflow/).
func examplesTxtar(t *testing.T, root, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == ".workflow":
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "-- %s --\n%s", filepath.ToSlash(rel), content)
		if !strings.HasSuffix(string(content), "\n") {
			b.WriteString("\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestShellWords(t *testing.T) {
	t.Parallel()
	ok := map[string][]string{
		`agent-worker send @global 'hi @alice, what?'`:         {"agent-worker", "send", "@global", "hi @alice, what?"},
		`agent-worker new bob --config '{"script":[]}' # note`: {"agent-worker", "new", "bob", "--config", `{"script":[]}`},
		`agent-worker logs run_…`:                              {"agent-worker", "logs", "run_…"},
		`agent-worker run x.yaml -- --feature 'a b'`:           {"agent-worker", "run", "x.yaml", "--", "--feature", "a b"},
	}
	for in, want := range ok {
		got, err := shellWords(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("shellWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{
		`agent-worker send bob "hi"`, `agent-worker runs | head`, `echo $HOME`, `cat ~/.agent-worker/daemon.json`,
		`ls *.yaml`, `agent-worker stop --all && echo done`, `agent-worker send bob 'open`,
	} {
		if _, err := shellWords(bad); err == nil {
			t.Errorf("shellWords(%q) accepted a command sh reads differently", bad)
		}
	}
}

func TestOutputRegexp(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		line  string
		match []string
		miss  []string
	}{
		"elided id": {"run run_…: writer@hello (mock, attempt 1), started …",
			[]string{"run run_2a63: writer@hello (mock, attempt 1), started 2026-11-26 22:58:32"},
			[]string{"run run_2a63: checker@hello (mock, attempt 1), started 2026"}},
		"columns": {"alice  mock  idle  @global",
			[]string{"alice  mock           idle     @global"},
			[]string{"alice mock paused @global"}},
		"regexp characters are literal": {"@hello: 3 run(s), 0 failed, …",
			[]string{"@hello: 3 run(s), 0 failed, 0 tokens in / 0 out, $0.0000, 100ms"},
			[]string{"@hello: 3 runs, 0 failed"}},
	}
	for name, c := range cases {
		re := regexp.MustCompile(outputRegexp(c.line))
		for _, s := range c.match {
			if !re.MatchString(s) {
				t.Errorf("%s: %q does not match %q", name, re, s)
			}
		}
		for _, s := range c.miss {
			if re.MatchString(s) {
				t.Errorf("%s: %q matches %q", name, re, s)
			}
		}
	}
	if re := outputRegexp("…"); re != "" {
		t.Errorf("a line of only … checks %q; want nothing", re)
	}
}

// TestDocLinks holds every relative link of README.md and docs/*.md to a
// file that exists, and every #anchor to a heading of its page, so that a
// moved or renamed guide breaks the build instead of the reader's click.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(text)) {
			target, anchor, _ := strings.Cut(l.target, "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			dest := page
			if target != "" {
				dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link to %s: %v", rel(root, page), l.line, l.target, err)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			b, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(headingAnchors(string(b)), anchor) {
				t.Errorf("%s:%d: link to %s: %s has no heading #%s", rel(root, page), l.line, l.target, rel(root, dest), anchor)
			}
		}
	}
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

type link struct {
	target string
	line   int
}

// linkRE finds inline Markdown links and images: [text](target).
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// markdownLinks returns the page's inline links outside code.
func markdownLinks(page string) []link {
	var out []link
	fenced := false
	for i, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		l = codeSpanRE.ReplaceAllString(l, "")
		for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
			out = append(out, link{m[1], i + 1})
		}
	}
	return out
}

var codeSpanRE = regexp.MustCompile("`[^`]*`")

// headingAnchors are the anchors GitHub makes of a page's headings:
// lower case, punctuation dropped, spaces as hyphens, repeats numbered.
func headingAnchors(page string) []string {
	var out []string
	seen := map[string]int{}
	fenced := false
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}
