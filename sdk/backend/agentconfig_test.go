package backend

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The agent's own MCP servers and env come out typed, sorted, ready for a
// run request and a process environment.
func TestAgentConfigServersAndEnv(t *testing.T) {
	t.Parallel()
	c, err := ParseAgentConfig([]byte(`{"script":[],"mcp_servers":{"web":{"url":"http://x/mcp","headers":{"A":"b"}},"gh":{"command":["npx","gh"],"env":{"T":"1"}}},"env":{"HTTPS_PROXY":"http://p:3128","A_B":"x=y"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := c.MCPServerList()
	if len(got) != 2 || got[0].Name != "gh" || got[0].Command[1] != "gh" || got[0].Env["T"] != "1" || got[1].URL != "http://x/mcp" || got[1].Headers["A"] != "b" {
		t.Errorf("MCPServerList = %+v", got)
	}
	if env := c.EnvList(); !slices.Equal(env, []string{"A_B=x=y", "HTTPS_PROXY=http://p:3128"}) {
		t.Errorf("EnvList = %q", env)
	}
	if string(c.Extra["script"]) != "[]" || len(c.Extra) != 1 {
		t.Errorf("Extra = %s, want only the script", c.Extra)
	}
	if none, err := ParseAgentConfig([]byte(`{}`)); err != nil || none.MCPServerList() != nil || len(none.EnvList()) != 0 || !none.IsZero() {
		t.Errorf("empty config: %+v, %v", none, err)
	}
}

// A config that cannot be used says which key and what to write, so
// `new --config`, POST /agents and a stored row all fail the same way.
func TestParseAgentConfigErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		`[1]`:                       "config must be a JSON object",
		`{`:                         "config must be a JSON object",
		`{"env":{"A=B":"x"}}`:       `"A=B" is not a usable variable`,
		`{"env":{"":"x"}}`:          `"" is not a usable variable`,
		`{"env":{"A":"x\u0000y"}}`:  `"A" is not a usable variable`,
		`{"env":{"A":1}}`:           "config env: want an object of strings",
		`{"env":["A=1"]}`:           "config env: want an object of strings",
		`{"max_steps":"lots"}`:      "config max_steps: want a whole number",
		`{"max_steps":-1}`:          "cannot be negative",
		`{"timeout":"soon"}`:        `config timeout: "soon" is not a duration`,
		`{"timeout":true}`:          "config timeout: want a duration",
		`{"tools":"read"}`:          "config tools: want a list",
		`{"mcp_servers":["x"]}`:     "config mcp_servers: want an object of servers",
		`{"provider":"openrouter"}`: "config provider: want an object",
	}
	for in, want := range tests {
		if _, err := ParseAgentConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAgentConfig(%s) = %v, want an error saying %q", in, err, want)
		}
	}
}

// JSON is only the form on a wire or in the store: a config survives the
// round trip typed, with its backend's own keys untouched, and equal
// configs are Equal whatever their spacing.
func TestAgentConfigRoundTrip(t *testing.T) {
	t.Parallel()
	in := AgentConfig{MaxSteps: 7, Timeout: 90 * time.Second, Tools: []string{},
		MCPServers: map[string]MCPServerConfig{"gh": {Command: []string{"npx", "gh"}}},
		Env:        map[string]string{"K": "v"}, Provider: &Provider{Name: "local", BaseURL: "http://l/v1"},
		Extra: map[string]json.RawMessage{"script": json.RawMessage(`[{"reply": "hi"}]`)}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out AgentConfig
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !in.Equal(out) {
		t.Errorf("round trip: %s became %+v", b, out)
	}
	if diff := cmp.Diff(in.Tools, out.Tools); diff != "" || out.Tools == nil {
		t.Errorf("tools: [] (none) must stay distinct from nil (the default): %#v", out.Tools)
	}
	if secs, err := ParseAgentConfig([]byte(`{"timeout": 90}`)); err != nil || secs.Timeout != 90*time.Second {
		t.Errorf("timeout in seconds: %v, %v", secs.Timeout, err)
	}
	if _, err := json.Marshal(AgentConfig{Extra: map[string]json.RawMessage{"env": json.RawMessage(`{}`)}}); err == nil {
		t.Error("Extra holding a typed key must not marshal")
	}
}
