package skill

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mustParse parses front matter given without its --- lines.
func mustParse(t *testing.T, front string) *Skill {
	t.Helper()
	s, err := Parse("SKILL.md", []byte("---\n"+front+"\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const gateSkill = `name: gate
description: tool rules under test
phases:
  - name: plan
    tools: {deny: [Edit, write_file, "doc_*", "shell:git commit*", "shell:rm -rf *"]}
    proof: {plan_summary: string}
  - name: check
    tools: {allow: [read_file, "mcp__agent-worker__channel_send", "shell:go test *", "shell:go vet ./...", "shell:cd *"]}
  - name: free
`

// TestCheck pins what each kind of rule allows and refuses, the attacks on
// shell: rules included: whitespace, env, chains, quoting, a full path,
// substitutions and sh -c / eval wrappers.
func TestCheck(t *testing.T) {
	t.Parallel()
	s := mustParse(t, gateSkill)
	tests := map[string]struct {
		phase string
		call  Call
		want  bool
	}{
		"no rules":                      {"free", Call{Tool: "write_file"}, true},
		"denied by name":                {"plan", Call{Tool: "write_file"}, false},
		"claude's Edit":                 {"plan", Call{Tool: "Edit"}, false},
		"denied by glob":                {"plan", Call{Tool: "doc_write"}, false},
		"daemon tool with mcp prefix":   {"plan", Call{Tool: "mcp__agent-worker__doc_write"}, false},
		"codex's mcp prefix":            {"plan", Call{Tool: "mcp__agent_worker__doc_append"}, false},
		"other server keeps its prefix": {"plan", Call{Tool: "mcp__docs__doc_write"}, true},
		"not denied":                    {"plan", Call{Tool: "read_file"}, true},
		"effort tool always allowed":    {"check", Call{Tool: "effort_continue"}, true},
		"effort tool with prefix":       {"check", Call{Tool: "mcp__agent-worker__effort_log"}, true},

		"shell allowed":                {"plan", Call{Tool: "run_shell", Command: "go build ./..."}, true},
		"shell denied":                 {"plan", Call{Tool: "run_shell", Command: "git commit -m x"}, false},
		"Bash denied":                  {"plan", Call{Tool: "Bash", Command: "git commit -m x"}, false},
		"mock shell step denied":       {"plan", Call{Tool: "shell", Command: "git commit"}, false},
		"leading whitespace":           {"plan", Call{Tool: "run_shell", Command: "   \tgit commit -m x"}, false},
		"doubled space":                {"plan", Call{Tool: "run_shell", Command: "git  commit -m x"}, false},
		"after &&":                     {"plan", Call{Tool: "run_shell", Command: "true && git commit -m x"}, false},
		"after ;":                      {"plan", Call{Tool: "run_shell", Command: "echo hi; git commit -m x"}, false},
		"after |":                      {"plan", Call{Tool: "run_shell", Command: "echo msg | git commit -F -"}, false},
		"after ||":                     {"plan", Call{Tool: "run_shell", Command: "false || git commit"}, false},
		"on a second line":             {"plan", Call{Tool: "run_shell", Command: "ls\ngit commit"}, false},
		"backgrounded":                 {"plan", Call{Tool: "run_shell", Command: "git commit & wait"}, false},
		"in a subshell":                {"plan", Call{Tool: "run_shell", Command: "(cd x && git commit)"}, false},
		"in an if":                     {"plan", Call{Tool: "run_shell", Command: "if true; then git commit; fi"}, false},
		"env wrapper":                  {"plan", Call{Tool: "run_shell", Command: "env GIT_AUTHOR_NAME=x git commit"}, false},
		"env -i wrapper":               {"plan", Call{Tool: "run_shell", Command: "env -i -u HOME git commit"}, false},
		"assignment prefix":            {"plan", Call{Tool: "run_shell", Command: "X=1 Y='a b' git commit"}, false},
		"command wrapper":              {"plan", Call{Tool: "run_shell", Command: "command git commit"}, false},
		"nohup nice wrapper":           {"plan", Call{Tool: "run_shell", Command: "nohup nice -n 5 git commit"}, false},
		"exec wrapper":                 {"plan", Call{Tool: "run_shell", Command: "exec git commit"}, false},
		"full path":                    {"plan", Call{Tool: "run_shell", Command: "/usr/bin/git commit -m x"}, false},
		"quoted program":               {"plan", Call{Tool: "run_shell", Command: `"git" 'commit' -m x`}, false},
		"quote inside a word":          {"plan", Call{Tool: "run_shell", Command: `git com"mit" -m x`}, false},
		"backslash inside a word":      {"plan", Call{Tool: "run_shell", Command: `git com\mit`}, false},
		"line continuation":            {"plan", Call{Tool: "run_shell", Command: "git \\\ncommit"}, false},
		"sh -c":                        {"plan", Call{Tool: "run_shell", Command: "sh -c 'git commit -m x'"}, false},
		"bash -lc":                     {"plan", Call{Tool: "run_shell", Command: `bash -lc "cd x && git commit"`}, false},
		"sh -c nested":                 {"plan", Call{Tool: "run_shell", Command: `sh -c "bash -c 'git commit'"`}, false},
		"eval":                         {"plan", Call{Tool: "run_shell", Command: "eval git commit -m x"}, false},
		"$( )":                         {"plan", Call{Tool: "run_shell", Command: "echo $(git commit -m x)"}, false},
		"$( ) in double quotes":        {"plan", Call{Tool: "run_shell", Command: `echo "done: $(git commit)"`}, false},
		"backquotes":                   {"plan", Call{Tool: "run_shell", Command: "echo `git commit`"}, false},
		"process substitution":         {"plan", Call{Tool: "run_shell", Command: "cat <(git commit)"}, false},
		"quoted text is not a command": {"plan", Call{Tool: "run_shell", Command: `echo 'git commit; rm -rf /'`}, true},
		"single-quoted $( )":           {"plan", Call{Tool: "run_shell", Command: `echo '$(git commit)'`}, true},
		"comment":                      {"plan", Call{Tool: "run_shell", Command: "ls # then git commit"}, true},
		"redirection 2>&1":             {"plan", Call{Tool: "run_shell", Command: "go test ./... 2>&1"}, true},
		"heredoc body":                 {"plan", Call{Tool: "run_shell", Command: "cat <<'EOF' > notes.md\ngit commit is for later\nEOF\nls"}, true},
		"command after heredoc":        {"plan", Call{Tool: "run_shell", Command: "cat <<EOF\nx\nEOF\ngit commit"}, false},
		"git commit-tree is a commit":  {"plan", Call{Tool: "run_shell", Command: "git commit-tree x"}, false},
		"git status":                   {"plan", Call{Tool: "run_shell", Command: "git status"}, true},

		"allowed by name":              {"check", Call{Tool: "read_file"}, true},
		"allowed by prefixed name":     {"check", Call{Tool: "channel_send"}, true},
		"not in allow list":            {"check", Call{Tool: "write_file"}, false},
		"allowed command":              {"check", Call{Tool: "run_shell", Command: "go test ./pkg/..."}, true},
		"allowed exactly":              {"check", Call{Tool: "run_shell", Command: "go vet ./..."}, true},
		"allowed chain":                {"check", Call{Tool: "run_shell", Command: "cd sub && go test -run X ./..."}, true},
		"allowed full path":            {"check", Call{Tool: "Bash", Command: "/usr/local/go/bin/go test ./..."}, true},
		"chain with one not allowed":   {"check", Call{Tool: "run_shell", Command: "go test ./... && rm -rf /"}, false},
		"pipe into a not allowed":      {"check", Call{Tool: "run_shell", Command: "go test ./... | sh"}, false},
		"allowed glob is not sh -c":    {"check", Call{Tool: "run_shell", Command: "sh -c 'go test ./...'"}, false},
		"allowed glob is not bash -c":  {"check", Call{Tool: "run_shell", Command: `bash -c "go test ./..."`}, false},
		"allowed glob is not eval":     {"check", Call{Tool: "run_shell", Command: "eval go test ./..."}, false},
		"substitution must be allowed": {"check", Call{Tool: "run_shell", Command: "go test $(rm -rf /)"}, false},
		"arithmetic runs nothing":      {"check", Call{Tool: "run_shell", Command: "go test -count=$((1+1)) ./..."}, true},
		"program in a variable":        {"check", Call{Tool: "run_shell", Command: "$GO test ./..."}, false},
		"empty command":                {"check", Call{Tool: "run_shell", Command: "  "}, true},
		"not a shell tool":             {"check", Call{Tool: "write_file", Command: "go test ./..."}, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := s.Phase(tt.phase).Check(tt.call)
			if got.Allowed != tt.want {
				t.Errorf("Check(%+v) in %s = %+v, want allowed %v", tt.call, tt.phase, got, tt.want)
			}
			if !got.Allowed && (got.Reason == "" || got.Rule == "") {
				t.Errorf("refusal without a reason or rule: %+v", got)
			}
		})
	}
}

// TestCheckReason pins the words a model reads when a call is refused.
func TestCheckReason(t *testing.T) {
	t.Parallel()
	s := mustParse(t, gateSkill)
	tests := map[string]struct {
		phase string
		call  Call
		want  Decision
	}{
		"denied, a later phase allows it": {"plan", Call{Tool: "write_file", Path: "main.go"}, Decision{
			Rule:   "deny write_file",
			Reason: `phase plan of skill gate does not allow write_file: write_file is denied by "write_file"; finish this phase first (effort_continue with proof plan_summary), phase free allows it`,
		}},
		"denied command": {"plan", Call{Tool: "run_shell", Command: "ls &&  git commit -m x"}, Decision{
			Rule:   "deny shell:git commit*",
			Reason: "phase plan of skill gate does not allow run_shell `ls && git commit -m x`: the command `git commit -m x` is denied by \"shell:git commit*\"; finish this phase first (effort_continue with proof plan_summary), phase free allows it",
		}},
		"not in the allow list": {"check", Call{Tool: "run_shell", Command: "go test ./... && make"}, Decision{
			Rule:   "allow",
			Reason: "phase check of skill gate does not allow run_shell `go test ./... && make`: the command `make` matches none of its allowed commands (read_file, mcp__agent-worker__channel_send, shell:go test *, shell:go vet ./..., shell:cd *); finish this phase first (effort_continue), phase free allows it",
		}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, s.Phase(tt.phase).Check(tt.call)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	last := mustParse(t, "name: one\ndescription: d\nphases: [{name: only, tools: {deny: [write_file]}}]").Phase("only")
	if got := last.Check(Call{Tool: "write_file"}).Reason; !strings.HasSuffix(got, "no later phase of the skill allows it either, so do this phase's work another way") {
		t.Errorf("last phase's reason: %s", got)
	}
}

// TestShellParts pins how a command line is split and normalised.
func TestShellParts(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		"git commit -m 'a b'":              {"git commit -m a b"},
		"  A=1 env -u X B=2 go test ./...": {"go test ./..."},
		"a && b || c; d | e & f":           {"a", "b", "c", "d", "e", "f"},
		"echo $(a; b) `c`":                 {"echo $(a; b) `c`", "a", "b", "c"},
		"sh -c 'x && y'":                   {"sh -c x && y", "x", "y"},
		"if a; then b; else c; fi":         {"a", "b", "c"},
		"for f in *.go; do gofmt $f; done": {"for f in *.go", "gofmt $f"},
		"cat <<-EOF\n\tgit push\n\tEOF\nz": {"cat <<EOF", "z"},
		"x 2>&1 >| out &> all":             {"x 2>&1 >| out &> all"},
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, p := range shellParts(in) {
				got = append(got, p.text)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("shellParts(%q) (-want +got):\n%s", in, diff)
			}
		})
	}
}

// TestGlobs pins the two glob forms: over names and commands (* crosses
// everything), and over paths (* stays in a directory, ** crosses them).
func TestGlobs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		pattern, s string
		path, want bool
	}{
		{"go test *", "go test ./pkg/... -run X", false, true},
		{"doc_*", "doc_write", false, true},
		{"doc_*", "mydoc_write", false, false},
		{"a?c", "abc", false, true},
		{"*a*a*a*a*a*b", strings.Repeat("a", 5000), false, false},
		{"*_test.go", "pkg/x/y_test.go", true, true},
		{"pkg/*.go", "pkg/x/y.go", true, false},
		{"pkg/**/*.go", "pkg/x/y.go", true, true},
		{"pkg/**/*.go", "pkg/y.go", true, true},
		{"docs/*.md", "./docs/a.md", true, true},
	} {
		var got bool
		if tt.path {
			got = matchPath(tt.pattern, tt.s)
		} else {
			got = wild(tt.pattern, tt.s)
		}
		if got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}
