package codex

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// Names Codex sees. The daemon's token reaches Codex through tokenEnv, so
// it never lands in a file.
const (
	daemonServer = "agent-worker"
	tokenEnv     = "AGENT_WORKER_MCP_TOKEN"
	providerName = "agent-worker"
)

// defaultTimeout is how long codex may print nothing before it is killed.
const defaultTimeout = 10 * time.Minute

// options is the agent's codex config (its Config JSON object). Unknown
// keys are ignored, so a config can outlive a switch of backend.
type options struct {
	CLI     string   `json:"cli"`
	Timeout duration `json:"timeout"`
	BaseURL string   `json:"base_url"`
	EnvKey  string   `json:"env_key"`
	// Sandbox is Codex's sandbox_mode, from sandbox_mode or a string
	// sandbox (the older key).
	Sandbox string `json:"-"`
}

// sandboxKeys are where a config gives Codex's sandbox_mode. sandbox as an
// object is the agent's own sandbox policy, which the daemon applies to
// the whole run, so sandbox_mode lets a config set both.
type sandboxKeys struct {
	Sandbox     json.RawMessage `json:"sandbox"`
	SandboxMode *string         `json:"sandbox_mode"`
}

func parseOptions(raw json.RawMessage) (options, error) {
	var o options
	var keys sandboxKeys
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &o); err != nil {
			return o, fmt.Errorf("config: %w", err)
		}
		if err := json.Unmarshal(raw, &keys); err != nil {
			return o, errors.New("config: sandbox_mode: want one of read-only, workspace-write or danger-full-access")
		}
	}
	key := "sandbox_mode"
	switch v := bytes.TrimSpace(keys.Sandbox); {
	case keys.SandboxMode != nil:
		o.Sandbox = *keys.SandboxMode
	case len(v) == 0, v[0] == '{', string(v) == "null":
		// No mode, or the agent's sandbox policy: not Codex's to read.
	case json.Unmarshal(v, &o.Sandbox) != nil:
		return o, errors.New("config: sandbox: want Codex's sandbox mode as a string (read-only, workspace-write or danger-full-access) or the agent's sandbox policy as an object")
	default:
		key = "sandbox"
	}
	switch o.Sandbox {
	case "":
		o.Sandbox = "workspace-write"
	case "read-only", "workspace-write", "danger-full-access":
	default:
		return o, fmt.Errorf("config: %s %q: use read-only, workspace-write or danger-full-access", key, o.Sandbox)
	}
	if o.Timeout <= 0 {
		o.Timeout = duration(defaultTimeout)
	}
	return o, nil
}

// duration reads "90s"-style strings or a number of seconds.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("timeout: %w", err)
		}
		*d = duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("timeout: want a duration such as \"10m\" or seconds, got %s", b)
	}
	*d = duration(secs * float64(time.Second))
	return nil
}

// model maps an agent's model to Codex's name for it: the openai provider
// prefix goes, and "" leaves Codex its default.
func model(m string) string {
	if m == "openai" {
		return ""
	}
	for _, prefix := range []string{"openai/", "openai:"} {
		if rest, ok := strings.CutPrefix(m, prefix); ok {
			return rest
		}
	}
	return m
}

// homeConfig is what config.toml says for one run.
type homeConfig struct {
	Model, System, Sandbox string
	// BaseURL and EnvKey, when BaseURL is set, replace Codex's built-in
	// provider with a Responses API endpoint.
	BaseURL, EnvKey string
	Daemon          backend.MCPServer
	Servers         []backend.MCPServer
	// WritableRoots are the workspace's writable repositories, which
	// Codex's workspace-write sandbox lets it change beside the project
	// directory (what --add-dir sets; written here because `codex exec
	// resume` of 0.169.0 has no --add-dir). It reads the read-only ones
	// without them: workspace-write reads everywhere, and the run's
	// sandbox keeps them read-only.
	WritableRoots []string
	// OTel is where Codex sends its own telemetry (logs and traces),
	// while the daemon traces; nil: nowhere.
	OTel *otelExport
}

// otelExport is the OpenTelemetry collector the daemon exports to, as the
// run's environment names it (host/telemetry's RunEnv): Codex 0.169.0
// reads its telemetry from config.toml's [otel], not the environment.
type otelExport struct {
	Endpoint, TracesEndpoint string
	GRPC                     bool
}

// otelFromEnv reads the collector from getenv; nil without one.
func otelFromEnv(getenv func(string) string) *otelExport {
	o := &otelExport{Endpoint: getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), TracesEndpoint: getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")}
	if o.Endpoint == "" && o.TracesEndpoint == "" {
		return nil
	}
	o.GRPC = cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL")) == "grpc"
	return o
}

// exporter is the [otel] exporter value for signal ("logs", "traces"),
// "" when the environment names no collector for it. A signal's own
// endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is used as given; the
// general one gets the signal's path over HTTP.
func (o *otelExport) exporter(signal string) string {
	ep := strings.TrimSuffix(o.Endpoint, "/")
	switch {
	case signal == "traces" && o.TracesEndpoint != "":
		ep = o.TracesEndpoint
	case ep == "":
		return ""
	case !o.GRPC:
		ep += "/v1/" + signal
	}
	if o.GRPC {
		return "{ otlp-grpc = { endpoint = " + str(ep) + " } }"
	}
	return "{ otlp-http = { endpoint = " + str(ep) + ", protocol = \"binary\" } }"
}

// render writes c as TOML. It is written by hand so that every value is
// escaped the same way and the file reads the same on every run.
func (c homeConfig) render() (string, error) {
	var b strings.Builder
	b.WriteString("# Written by agent-worker for one codex run.\n")
	if m := model(c.Model); m != "" {
		kv(&b, "model", str(m))
	}
	if c.BaseURL != "" {
		kv(&b, "model_provider", str(providerName))
	}
	kv(&b, "approval_policy", str("never"))
	kv(&b, "sandbox_mode", str(c.Sandbox))
	if c.System != "" {
		kv(&b, "developer_instructions", str(c.System))
	}
	if c.BaseURL != "" {
		table(&b, "model_providers", providerName)
		kv(&b, "name", str(providerName))
		kv(&b, "base_url", str(c.BaseURL))
		kv(&b, "env_key", str(cmp.Or(c.EnvKey, "OPENAI_API_KEY")))
		kv(&b, "wire_api", str("responses"))
		// Few retries: a dead model server must end the run, and the
		// daemon retries failed runs with backoff anyway.
		kv(&b, "request_max_retries", "2")
		kv(&b, "stream_max_retries", "2")
	}

	if len(c.WritableRoots) > 0 {
		table(&b, "sandbox_workspace_write")
		kv(&b, "writable_roots", list(c.WritableRoots))
	}

	if o := c.OTel; o != nil {
		table(&b, "otel")
		kv(&b, "environment", str("agent-worker"))
		if e := o.exporter("logs"); e != "" {
			kv(&b, "exporter", e)
		}
		kv(&b, "trace_exporter", o.exporter("traces"))
	}

	// The daemon's server: the token comes from tokenEnv.
	table(&b, "mcp_servers", daemonServer)
	kv(&b, "url", str(c.Daemon.URL))
	headers := maps.Clone(c.Daemon.Headers)
	if auth, ok := headers["Authorization"]; ok && strings.HasPrefix(auth, "Bearer ") {
		delete(headers, "Authorization")
		kv(&b, "bearer_token_env_var", str(tokenEnv))
	}
	if len(headers) > 0 {
		kv(&b, "http_headers", inline(headers))
	}
	kv(&b, "default_tools_approval_mode", str("approve"))

	seen := map[string]bool{daemonServer: true}
	for i, s := range c.Servers {
		name := cmp.Or(s.Name, "server-"+strconv.Itoa(i+1))
		if seen[name] {
			return "", fmt.Errorf("MCP server %q is configured twice (%s is the daemon's)", name, daemonServer)
		}
		seen[name] = true
		table(&b, "mcp_servers", name)
		switch {
		case s.URL != "":
			kv(&b, "url", str(s.URL))
			if len(s.Headers) > 0 {
				kv(&b, "http_headers", inline(s.Headers))
			}
		case len(s.Command) > 0:
			kv(&b, "command", str(s.Command[0]))
			if len(s.Command) > 1 {
				kv(&b, "args", list(s.Command[1:]))
			}
			if len(s.Env) > 0 {
				kv(&b, "env", inline(s.Env))
			}
		default:
			return "", fmt.Errorf("MCP server %q has neither a url nor a command", name)
		}
		// The user gave the agent these servers; with approval_policy
		// never, a tool needing approval would simply fail.
		kv(&b, "default_tools_approval_mode", str("approve"))
	}
	return b.String(), nil
}

func kv(b *strings.Builder, key, value string) {
	b.WriteString(tomlKey(key) + " = " + value + "\n")
}

func table(b *strings.Builder, keys ...string) {
	for i, k := range keys {
		keys[i] = tomlKey(k)
	}
	b.WriteString("\n[" + strings.Join(keys, ".") + "]\n")
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func tomlKey(k string) string {
	if bareKey.MatchString(k) {
		return k
	}
	return str(k)
}

// str is s as a TOML basic string.
func str(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func list(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = str(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// inline is m as a TOML inline table, keys sorted.
func inline(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, str(k)+" = "+str(m[k]))
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}
