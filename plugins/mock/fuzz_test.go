package mock

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// checkSteps checks what the runner relies on in a parsed script: each
// step one known action with its step number, its values in range, and
// modifiers only beside the action they belong to.
func checkSteps(t *testing.T, steps []step) {
	t.Helper()
	for i, s := range steps {
		bad := ""
		switch {
		case s.index != i+1:
			bad = "numbered wrong"
		case !slices.Contains(actions, s.action):
			bad = "an unknown action"
		case (s.action == "tool" || s.action == "session") && s.text == "",
			s.action == "spawn" && len(s.argv) == 0,
			s.action == "shell" && strings.TrimSpace(s.text) == "":
			bad = "empty"
		case s.action == "crash" && (s.n < 0 || s.n > 255), s.action == "flood" && s.n < 0, s.sleep < 0, s.attempt < 0:
			bad = "out of range"
		case s.to != "" && s.action != "reply", s.args != nil && s.action != "tool", s.permanent && s.action != "fail",
			s.repo != "" && s.action != "shell" && s.action != "write":
			bad = "a modifier of another action"
		}
		if bad != "" {
			t.Errorf("step %d is %s: %+v", i+1, bad, s)
		}
	}
}

// FuzzScript reads an agent's mock config, as a run does: an inline
// script, or a script file in the project directory (script.yaml and
// script.json are there). A config it accepts yields checked steps, or
// none when it has no script; anything else is an error that says which
// part is wrong.
func FuzzScript(f *testing.F) {
	dir := f.TempDir()
	for name, src := range map[string]string{
		"script.yaml": "- reply: '{{name}} here, @{{first_sender}}'\n  to: bob\n- tool: team_doc_append\n  args: {content: x}\n- fail: flaky\n  when: {attempt: 1}\n- result: done\n",
		"script.json": `[{"sleep": "10ms"}, {"usage": {"input": 3, "output": 4, "cost": 0.5}}, {"crash": 3}]`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	for _, s := range []string{
		``, `null`, `{}`, `{"env": {"A": "b"}, "sandbox": "read-only"}`,
		`{"script": [{"reply": "hi", "to": "bob"}, {"tool": "channel_send", "args": {"message": "{{last.id}}"}}, {"result": "ok"}]}`,
		`{"script": [{"text": "x", "when": {"attempt": 2, "from": "bob", "text": "review"}}, {"fail": "no", "permanent": true}]}`,
		`{"script": [{"spawn": ["sleep", "60"]}, {"shell": "ls -la"}, {"hang": true}, {"flood": 100}, {"stderr": "e"}, {"session": "s1"}]}`,
		`{"script_file": "script.yaml"}`, `{"script_file": "script.json"}`, `{"script_file": "../../../../etc/passwd"}`, `{"script_file": "/dev/zero"}`,
		`{"script": [{"repy": "x"}]}`, `{"script": [{"reply": "a", "text": "b"}]}`, `{"script": [{"crash": 300}]}`, `{"script": {"reply": "x"}}`,
		`{"script": [], "script_file": "x.yaml"}`, `[1]`, `{"script": [{"sleep": "-1s"}]}`, `{"script": [{"usage": {"inputs": 3}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, config []byte) {
		steps, configured, err := loadScript(backend.Request{Agent: backend.Agent{Config: config}, ProjectDir: dir})
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "config") && !strings.HasPrefix(msg, "script") {
				t.Errorf("config %q: error %q does not say which part is wrong", config, msg)
			}
			if steps != nil {
				t.Errorf("config %q: error %v beside %d steps", config, err, len(steps))
			}
			return
		}
		if !configured && steps != nil {
			t.Errorf("config %q: steps %+v, but no script", config, steps)
		}
		checkSteps(t, steps)
	})
}

// FuzzYAMLScript parses a YAML script file. A script it accepts yields
// checked steps, the same actions as encoding/json reads from the same
// text when that is JSON too; every error begins with the file's name,
// and the line it names is in the file.
func FuzzYAMLScript(f *testing.F) {
	const head = "# a reviewer\n- reply: |\n    looked at it\n    all good\n\n"
	for _, s := range []string{
		"", "# nothing yet\n", "- reply: hi\n  to: bob\n- sleep: 1s\n  when:\n    attempt: 2\n",
		"- tool: x\n  args: {content: \"a, b\", n: [1, 2.5, {k: v}], empty: {}, url: http://h:1}\n",
		head + "- tool: team_doc_append\n  args: {content: x}\n  to: bob\n", head + "- text: x\n  when:\n    attempt: 0\n",
		"- a\n\t- b\n", "- reply: a\n- tool: x\n  args: {a: 1,\n", "- reply: a\n- reply: *greeting\n", "- reply: a\n---\n- reply: b\n",
		head + "- usage:\n    cost: .inf\n", "- tool: t\n  args: {1: one, true: yes, 2001-12-14: d}\n", "- &s {reply: a}\n- *s\n",
		`[{"reply": "hi"}, {"crash": 1.0}, {"flood": 2}]`,
	} {
		f.Add([]byte(s))
	}
	lineRE := regexp.MustCompile(`^s\.yaml:(\d+):`)
	f.Fuzz(func(t *testing.T, src []byte) {
		steps, err := parseYAMLScript("s.yaml", src)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "s.yaml:") {
				t.Fatalf("error %q does not begin with the file's name", msg)
			}
			// YAML, like editors, also breaks lines at a lone CR (and NEL, LS, PS).
			text := strings.ReplaceAll(string(src), "\r\n", "\n")
			lines := 1
			for _, sep := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
				lines += strings.Count(text, sep)
			}
			if m := lineRE.FindStringSubmatch(msg); m != nil {
				if n, _ := strconv.Atoi(m[1]); n < 1 || n > lines+1 {
					t.Errorf("error %q names line %d of a %d-line file", msg, n, lines)
				}
			}
			return
		}
		checkSteps(t, steps)
		if !json.Valid(src) {
			return
		}
		fromJSON, err := parseSteps(src)
		if err != nil {
			return // YAML reads 1.0 as a whole number, JSON does not
		}
		actionsOf := func(steps []step) []string {
			var out []string
			for _, s := range steps {
				out = append(out, s.action)
			}
			return out
		}
		if a, b := actionsOf(steps), actionsOf(fromJSON); !slices.Equal(a, b) {
			t.Errorf("%q: YAML reads actions %q, JSON %q", src, a, b)
		}
	})
}
