package workflow

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// The fuzz targets of this package: the workflow file (FuzzParse), the
// ${{ }} variables in it (FuzzInterpolate), a webhook's body rendered
// into its message (FuzzRenderTrigger) and an agent's sandbox policy
// (FuzzSandbox). Each checks what a loaded file promises the daemon, not
// only that nothing panics.

// fuzzDir is a folder with a workflow file's neighbours: a prompt file
// with variables, for system_prompt: prompt.md.
func fuzzDir(f *testing.F) string {
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prompt.md"), []byte("You review ${{ workflow.name }}:${{ workflow.tag }} in ${{ source.dir }}.\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	return dir
}

// addFiles seeds f with the workflow files of the examples and of this
// package's tests, so fuzzing starts from what users write.
func addFiles(f *testing.F, patterns ...string) {
	for _, pattern := range patterns {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, path := range paths {
			b, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// FuzzParse parses arbitrary workflow files. A file that fails comes back
// as Problems, each placed in the file and saying something; a file that
// loads has valid, unique names, absolute sandbox paths, a configuration
// the store reads back as it was written, and resolves with every variable
// given a value without leaving a ${{ }} behind.
func FuzzParse(f *testing.F) {
	addFiles(f, "../examples/*/*.yaml", "testdata/*/workflow.yaml", "testdata/seed/*.yml")
	for _, s := range []string{
		"agents: {a: {backend: mock}}",
		"name: wf\nagents: {a: {backend: mock, env: {X: '${{ env.HOME }}'}}}\nkickoff: '@a ${{ params.pr }} ${{ commit }}'\nparams: [{name: pr, default: '1'}]\nsetup: [{shell: git rev-parse HEAD, as: commit}]\n",
		"agents: {a: {system_prompt: prompt.md, sandbox: {read: [~, ./x, /y/../z], network: [443, 443], mode: on}}}\n",
		"agents: {a: {backend: mock}}\ntriggers: [{webhook: pr, secret_env: S, message: '@a ${{ body.pull_request.html_url }}'}]\n",
		"agents: {a: {backend: claude, mcp_servers: {web: {url: 'https://x/${{ env.T }}', headers: {A: b}}, fs: {command: [npx, fs], args: ['${{ source.dir }}']}}}}\n",
		"agents: {a: &x {backend: mock}, b: *x}\ncontext: {documents: {provider: file, dir: ./docs/${{ workflow.tag }}}, documentOwner: a}\n",
		"agents: {a: {backend: mock, config: {script: [{reply: '{{name}} ${{ x }}'}]}, can_spawn: true, budget: {usd: 1}}}\nloop_guard: {max_rounds: 0}\nworkspace: {git: worktree, base: main}\n",
		"agents:\n  " + strings.Repeat("a", 2000) + ": {}\n",
		"agents: [" + strings.Repeat("[", 500) + strings.Repeat("]", 500) + "]\n",
		"\xff\xfeagents: {a: {}}\x00",
	} {
		f.Add([]byte(s))
	}
	dir := fuzzDir(f)
	path := filepath.Join(dir, "wf.yaml")
	f.Fuzz(func(t *testing.T, content []byte) {
		file, err := Parse(path, content)
		if err != nil {
			checkProblems(t, path, content, err)
			return
		}
		checkFile(t, file)
		again, err := Parse(path, content)
		if err != nil {
			t.Fatalf("a second parse of the same file fails: %v", err)
		}
		if d := cmp.Diff(file, again); d != "" {
			t.Errorf("two parses of the same file differ (-first +second):\n%s", d)
		}
		resolveAll(t, file)
	})
}

// checkProblems checks the error of a file that did not load: Problems,
// each in the file, placed no further than one line past its end, saying
// something, in the order of the file.
func checkProblems(t *testing.T, path string, content []byte, err error) {
	t.Helper()
	var ps Problems
	if !errors.As(err, &ps) || len(ps) == 0 {
		t.Fatalf("Parse error %T %q is not a list of problems", err, err)
	}
	// YAML, like editors, also breaks lines at a lone CR (and NEL, LS, PS).
	text := strings.ReplaceAll(string(content), "\r\n", "\n")
	lines := 1
	for _, sep := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
		lines += strings.Count(text, sep)
	}
	for i, p := range ps {
		if p.File != path || strings.TrimSpace(p.Msg) == "" || p.Line < 0 || p.Col < 0 || p.Line > lines+1 {
			t.Errorf("problem %d of a %d-line file is misplaced or empty: %+v", i, lines, p)
		}
		if i > 0 && (ps[i-1].Line > p.Line || ps[i-1].Line == p.Line && ps[i-1].Col > p.Col) {
			t.Errorf("problems out of order: %v before %v", ps[i-1], p)
		}
	}
	if err.Error() == "" {
		t.Error("empty error")
	}
}

// checkFile checks what a loaded file promises the daemon.
func checkFile(t *testing.T, f *File) {
	t.Helper()
	if err := CheckScopeName("workflow", f.Name); err != nil {
		t.Errorf("loaded with a bad name: %v", err)
	}
	if len(f.Agents) == 0 {
		t.Error("loaded without agents")
	}
	names := map[string]bool{}
	for _, a := range f.Agents {
		if err := CheckAgentName(a.Name); err != nil || names[a.Name] {
			t.Errorf("agent %q: a bad or repeated name (%v)", a.Name, err)
		}
		names[a.Name] = true
		if !pluginNameRE.MatchString(a.Backend) || a.MaxSteps < 0 || a.Timeout < 0 || a.MaxSpawned < 0 || a.CanSpawn != (a.MaxSpawned > 0) {
			t.Errorf("agent %s: backend %q, max_steps %d, timeout %v, can_spawn %v with max_spawned %d", a.Name, a.Backend, a.MaxSteps, a.Timeout, a.CanSpawn, a.MaxSpawned)
		}
		if !slices.IsSortedFunc(a.MCPServers, func(x, y MCPServer) int { return strings.Compare(x.Name, y.Name) }) {
			t.Errorf("agent %s: mcp servers not sorted by name", a.Name)
		}
		for _, s := range a.MCPServers {
			if (len(s.Command) > 0) == (s.URL != "") {
				t.Errorf("agent %s: mcp server %s needs exactly one of command and url: %+v", a.Name, s.Name, s)
			}
		}
		checkSandbox(t, a.Sandbox)
		checkStored(t, a)
	}
	if o := f.Context.DocumentOwner; o != "" && !names[o] {
		t.Errorf("documentOwner %q is not an agent", o)
	}
	if f.LoopGuard < 0 {
		t.Errorf("loop guard %d", f.LoopGuard)
	}
	seen := map[string]bool{}
	for _, tr := range f.Triggers {
		if CheckScopeName("webhook", tr.Name) != nil || seen[tr.Name] || !identRE.MatchString(tr.SecretEnv) || strings.TrimSpace(tr.Message) == "" {
			t.Errorf("trigger %+v: bad or repeated name, secret_env or empty message", tr)
		}
		seen[tr.Name] = true
	}
	params := map[string]bool{}
	for _, p := range f.Params {
		if !paramNameRE.MatchString(p.Name) || params[p.Name] || !slices.Contains([]string{"string", "number", "boolean"}, p.Type) {
			t.Errorf("param %+v: bad or repeated name, or bad type", p)
		}
		params[p.Name] = true
	}
	as := map[string]bool{}
	for _, s := range f.Setup {
		if s.Shell == "" || s.Timeout <= 0 || s.As != "" && (as[s.As] || !identRE.MatchString(s.As)) {
			t.Errorf("setup step %+v: no command, no timeout, or a bad or repeated as:", s)
		}
		as[s.As] = s.As != ""
	}
}

// checkSandbox checks a parsed sandbox policy: absolute, clean paths,
// each once; ports 1-65535, each once; a known mode.
func checkSandbox(t *testing.T, s *backend.SandboxConfig) {
	t.Helper()
	if s == nil {
		return
	}
	for _, list := range [][]string{s.Read, s.Write} {
		for i, p := range list {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.Contains(p, "${{") || slices.Contains(list[:i], p) {
				t.Errorf("sandbox path %q: not absolute, not clean, a variable or repeated (%q)", p, list)
			}
		}
	}
	if n := s.Network; n != nil {
		for i, port := range n.Ports {
			if port == 0 || slices.Contains(n.Ports[:i], port) {
				t.Errorf("sandbox ports %v: 0 or repeated", n.Ports)
			}
		}
		if n.All && len(n.Ports) > 0 {
			t.Errorf("sandbox network is all and ports %v", n.Ports)
		}
	}
	if !slices.Contains([]string{"", backend.SandboxOn, backend.SandboxOff}, s.Mode) {
		t.Errorf("sandbox mode %q", s.Mode)
	}
}

// checkStored checks that the agent's configuration, as the daemon stores
// it (JSON), reads back the same: a file that loads must not leave an
// agent the store cannot read.
func checkStored(t *testing.T, a Agent) {
	t.Helper()
	want := a.BackendConfig()
	b, err := json.Marshal(want)
	if err != nil {
		t.Errorf("agent %s: its config cannot be stored: %v", a.Name, err)
		return
	}
	got, err := backend.ParseAgentConfig(b)
	if err != nil {
		t.Errorf("agent %s: the stored config %s cannot be read back: %v", a.Name, b, err)
		return
	}
	if !got.Equal(want) {
		t.Errorf("agent %s: the stored config %s reads back as something else: %+v", a.Name, b, got)
	}
}

// fullVars gives every variable f may use a value without braces.
func fullVars(f *File) Vars {
	v := Vars{Params: map[string]string{}, Setup: map[string]string{}, Env: func(string) (string, bool) { return "v", true }}
	for _, p := range f.Params {
		v.Params[p.Name] = "v"
	}
	for _, s := range f.Setup {
		if s.As != "" {
			v.Setup[s.As] = "v"
		}
	}
	return v
}

// resolveAll resolves a loaded file with every variable set: that cannot
// fail, nothing but a trigger's ${{ body.PATH }} may be left, and those
// render from an empty JSON object as missing paths.
func resolveAll(t *testing.T, f *File) *Instance {
	t.Helper()
	in, err := Resolve(f, fullVars(f))
	if err != nil {
		t.Fatalf("a file that loaded does not resolve with every variable set: %v", err)
	}
	var strs []string
	strs = append(strs, in.Kickoff, in.Context.DocsDir)
	for _, a := range in.Agents {
		strs = append(strs, a.SystemPrompt, a.WakeupPrompt)
		for _, v := range a.Env {
			strs = append(strs, v)
		}
		for _, s := range a.MCPServers {
			strs = append(strs, s.URL)
			strs = append(strs, s.Command...)
			for _, v := range s.Env {
				strs = append(strs, v)
			}
			for _, v := range s.Headers {
				strs = append(strs, v)
			}
		}
		checkStored(t, a)
	}
	for _, s := range strs {
		if strings.Contains(s, "${{") {
			t.Errorf("resolved without error, but %q still holds ${{", s)
		}
	}
	for _, tr := range in.Triggers {
		vars := varRE.FindAllStringSubmatch(tr.Message, -1)
		for _, m := range vars {
			if !strings.HasPrefix(m[1], "body.") {
				t.Errorf("webhook %s: %s is left in its message %q", tr.Name, m[0], tr.Message)
			}
		}
		text, missing, err := RenderTrigger(tr.Message, []byte("{}"))
		if err != nil || len(missing) != len(vars) {
			t.Errorf("webhook %s: message %q renders from {} as %q, missing %q, %v; want each of its %d body paths missing", tr.Name, tr.Message, text, missing, err, len(vars))
		}
	}
	return in
}

// FuzzInterpolate puts one string wherever a workflow takes ${{ }}
// variables, or in a webhook's message. Parse decides whether its
// variables can resolve; when it says they can, Resolve with every
// variable set succeeds and leaves none behind, and a string without
// variables comes through unchanged.
func FuzzInterpolate(f *testing.F) {
	for _, s := range []string{
		"plain text", "${{ env.HOME }}", "${{params.repo}}/${{ params.pr }}", "${{ commit }} at ${{ workflow.name }}:${{ workflow.tag }}",
		"${{ source.dir }}/x", "${{ body.pull_request.html_url }}", "${{ body.commits.0.id }}", "${{ env.A }}${{ env.B }}",
		"${{", "}}", "${{ }}", "${{ env.X", "$${{ env.X }}}}", "${{ ${{ env.X }} }}", "${{ env.X\n}}", "${{ later }}",
		"${{ params.nope }}", "${{ body..x }}", "${{ workflow.nope }}", "\xff${{ env.\xfe }}", "a\x00${{ env.A }}\x00",
	} {
		f.Add(s)
	}
	dir := fuzzDir(f)
	path := filepath.Join(dir, "wf.yaml")
	f.Fuzz(func(t *testing.T, s string) {
		for _, trigger := range []bool{false, true} {
			doc := map[string]any{
				"name":    "wf",
				"params":  []any{map[string]any{"name": "repo", "default": "acme/app"}, map[string]any{"name": "pr", "required": true}},
				"setup":   []any{map[string]any{"shell": "git rev-parse HEAD", "as": "commit"}, map[string]any{"shell": "echo ${{ commit }}", "as": "later"}},
				"kickoff": "@a go",
				"agents":  map[string]any{"a": map[string]any{"backend": "mock"}},
			}
			if trigger {
				doc["triggers"] = []any{map[string]any{"webhook": "hook", "secret_env": "S", "message": "hook: " + s}}
			} else {
				doc["kickoff"] = s
				doc["agents"] = map[string]any{"a": map[string]any{
					"backend": "mock", "system_prompt": "You: " + s, "wakeup_prompt": s, "schedule": "1h",
					"env": map[string]any{"X": s}, "mcp_servers": map[string]any{"m": map[string]any{"command": []any{"run", s}, "env": map[string]any{"Y": s}}},
				}}
			}
			src, ok := quotedYAML(doc)
			if !ok {
				t.Skip("yaml.v3 cannot write this string so that it reads it back")
			}
			file, err := Parse(path, src)
			if err != nil {
				checkProblems(t, path, src, err)
				if !strings.Contains(s, "${{") && utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
					t.Errorf("%q has no variables, but the file holding it does not load: %v", s, err)
				}
				continue
			}
			checkFile(t, file)
			in := resolveAll(t, file)
			if trigger || strings.Contains(s, "${{") || file.Kickoff != s {
				continue
			}
			if in.Kickoff != s || in.Agents[0].Env["X"] != s {
				t.Errorf("%q has no variables, but resolves as %q", s, in.Kickoff)
			}
		}
	})
}

// quotedYAML writes doc with every string double-quoted: yaml.v3 writes
// some strings as block scalars it cannot read back ("\n0" in a list),
// and Node.Encode goes through that writer. It reports false when the text
// does not read back as doc all the same.
func quotedYAML(doc map[string]any) ([]byte, bool) {
	var node func(v any) *yaml.Node
	node = func(v any) *yaml.Node {
		switch v := v.(type) {
		case map[string]any:
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				n.Content = append(n.Content, node(k), node(v[k]))
			}
			return n
		case []any:
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for _, x := range v {
				n.Content = append(n.Content, node(x))
			}
			return n
		case bool:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: v.(string)}
	}
	src, err := yaml.Marshal(node(doc))
	if err != nil {
		return nil, false
	}
	var back map[string]any
	if err := yaml.Unmarshal(src, &back); err != nil || !cmp.Equal(back, doc) {
		return nil, false
	}
	return src, true
}

// FuzzRenderTrigger renders a webhook's message from a delivery's body.
// Without ${{ body.PATH }} in the message the body is not read at all;
// with one, a body that is not exactly one JSON value is refused, and any
// other renders, each path either filled in or reported missing.
func FuzzRenderTrigger(f *testing.F) {
	const body = `{"pull_request": {"html_url": "https://github.com/acme/app/pull/7", "number": 7, "draft": false, "title": null,
		"labels": [{"name": "bug"}, {"name": "ui"}], "big": 12345678901234567890, "head": {"ref": "x<y>&z"}}}`
	for _, tc := range [][2]string{
		{"PR ${{ body.pull_request.html_url }}", body},
		{"#${{ body.pull_request.number }} ${{ body.pull_request.big }} ${{ body.pull_request.labels.1.name }}", body},
		{"${{ body.pull_request.head }} ${{ body.pull_request.nope }}", body},
		{"${{ body.x }}", `{"x": "${{ body.y }}", "y": "secret"}`},
		{"${{ env.X }} ${{ body.x }}", `{"x": 1}`},
		{"plain", "not json"},
		{"${{ body.x }}", "payload=%7B%7D"},
		{"${{ body.x }}", `{"x":1} {"x":2}`},
		{"${{ body.0 }}", `["a"]`},
		{"${{ body.x }}", `"s"`},
	} {
		f.Add(tc[0], []byte(tc[1]))
	}
	f.Fuzz(func(t *testing.T, message string, body []byte) {
		text, missing, err := RenderTrigger(message, body)
		var bodyVars int
		for _, m := range varRE.FindAllStringSubmatch(message, -1) {
			if strings.HasPrefix(m[1], "body.") {
				bodyVars++
			}
		}
		switch {
		case bodyVars == 0:
			if err != nil || text != message || missing != nil {
				t.Errorf("RenderTrigger(%q) without body paths = %q, %q, %v; want it unchanged", message, text, missing, err)
			}
			return
		case !json.Valid(body):
			if err == nil || text != "" || missing != nil {
				t.Errorf("RenderTrigger(%q, %q): a body that is not JSON renders as %q, missing %q, %v", message, body, text, missing, err)
			}
			return
		case err != nil:
			t.Fatalf("RenderTrigger(%q, %q): a JSON body is refused: %v", message, body, err)
		}
		if len(missing) > bodyVars {
			t.Errorf("RenderTrigger(%q): %d missing of %d paths", message, len(missing), bodyVars)
		}
		for _, m := range missing {
			if !strings.HasPrefix(m, "body.") || !strings.Contains(message, m) {
				t.Errorf("RenderTrigger(%q): missing %q is not a body path of the message", message, m)
			}
		}
		// Each top-level text, true, false or null renders as itself.
		var doc map[string]any
		if json.Unmarshal(body, &doc) != nil {
			return
		}
		for k, v := range doc {
			if !bodyPathRE.MatchString(k) || strings.Contains(k, ".") {
				continue
			}
			var want string
			switch v := v.(type) {
			case string:
				want = v
			case bool:
				want = map[bool]string{true: "true", false: "false"}[v]
			case nil:
			default:
				continue
			}
			got, missing, err := RenderTrigger("${{ body."+k+" }}", body)
			if err != nil || got != want || len(missing) > 0 {
				t.Errorf("body.%s of %s renders as %q, missing %q, %v; want %q", k, body, got, missing, err, want)
			}
		}
	})
}

// FuzzSandbox parses an agent's sandbox: policy, written in YAML after
// `sandbox:`. A policy that loads has absolute, clean, unique paths, valid
// unique ports and a known mode, and the store reads it back unchanged.
func FuzzSandbox(f *testing.F) {
	for _, s := range []string{
		"{read: [data, ./a/../b/, .], write: [out]}", "{read: [~, ~/.cache/go-build/, '~/x/../y'], write: ['~']}",
		"{write: [/srv//cache/, /srv/cache, /tmp/../var]}", "{network: none}", "{network: all}", "{network: [443, 8080, 443, 1, 65535]}",
		"{network: []}", "{mode: on}", "{mode: off}", "\n      read: [in]\n      write:\n        - out\n      network: [443]\n      mode: on",
		"{read: [../../../../etc]}", "{read: ['${{ env.HOME }}']}", "{read: [~root]}", "{network: [0, 65536, -1, 0x1bb, 1e3]}",
		"{read: [\"\\0\"]}", "{write: ['']}", "{mode: yes}", "{read: [&p /a, *p]}", "read-only", "[/data]",
	} {
		f.Add(s)
	}
	dir := fuzzDir(f)
	path := filepath.Join(dir, "wf.yaml")
	f.Fuzz(func(t *testing.T, policy string) {
		src := []byte("agents:\n  a:\n    backend: mock\n    sandbox: " + policy + "\n")
		file, err := Parse(path, src)
		if err != nil {
			checkProblems(t, path, src, err)
			return
		}
		checkFile(t, file) // checks the sandbox and that it is stored as it was parsed
		in := resolveAll(t, file)
		if d := cmp.Diff(file.Agents[0].Sandbox, in.Agents[0].Sandbox); d != "" {
			t.Errorf("Resolve changed the sandbox (-parsed +resolved):\n%s", d)
		}
	})
}

// A NUL byte in an env or header value (FuzzInterpolate found one) left an
// agent whose stored config the store refuses to read back: the file is
// refused where it says so, and a setup result that brings one is refused
// by Resolve.
func TestEnvNUL(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "wf.yaml")
	_, err := Parse(path, []byte("agents: {a: {backend: mock, env: {X: \"a\\0b\"}, mcp_servers: {m: {url: 'http://x', headers: {H: \"\\0\"}}}}}\n"))
	for _, want := range []string{"wf.yaml:1:38: env value of X holds a NUL byte", "wf.yaml:1:95: headers value of H holds a NUL byte"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse error = %v, want %q", err, want)
		}
	}
	f, err := Parse(path, []byte("agents: {a: {backend: mock, env: {X: '${{ out }}'}}}\nsetup: [{shell: printf 'a\\0b', as: out}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(f, Vars{Setup: map[string]string{"out": "a\x00b"}})
	if want := "agent a env X: a ${{ }} value holds a NUL byte"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Resolve error = %v, want %q", err, want)
	}
}

// A body with text after its JSON value (FuzzRenderTrigger found `""}`)
// is not JSON, and is refused like any other.
func TestRenderTriggerTrailingText(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`""}`, `{"x": 1}]`, `{"x": 1}}`, `1 ]`} {
		if text, _, err := RenderTrigger("${{ body.x }}", []byte(body)); err == nil {
			t.Errorf("RenderTrigger of body %s = %q, want an error", body, text)
		}
	}
	if text, _, err := RenderTrigger("${{ body.x }}", []byte(" {\"x\": 1}\n")); err != nil || text != "1" {
		t.Errorf("a body with white space around it = %q, %v", text, err)
	}
}
