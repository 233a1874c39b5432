package agents

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/llm"
	"github.com/agent-worker/agent-worker/sdk/plugin"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow"
)

// Catalog is what the agents package needs of the plugin catalog: the
// installed plugins of a kind, why one of them cannot be used, and where
// they were looked for.
type Catalog interface {
	Names(kind string) []string
	Unusable(kind, name string) error
	// Dirs are the folders searched for plugins, in order.
	Dirs() []string
}

// ResolveBackend is the backend a user's word means, if the daemon can run
// it: external, or an installed plugin that works (a first-party backend
// is a plugin too, and one that is not installed is refused with how to
// install it).
// The error says what to write or install instead; callers add where the
// word came from (a file:line, a request).
func ResolveBackend(c Catalog, word string) (string, error) {
	name := workflow.BackendName(word)
	if err := c.Unusable(plugin.KindBackend, name); err != nil {
		return "", err
	}
	installed := c.Names(plugin.KindBackend)
	if name == workflow.External || slices.Contains(installed, name) {
		return name, nil
	}
	if slices.Contains(workflow.Backends, name) {
		return "", api.Errorf(api.CodeInvalid, "backend %q is not installed: no agent-worker-backend-%s in %s. "+
			"Install it beside agent-worker with `go install %s/cmd/agent-worker-backend-%s@%s` (`go install %[4]s/cmd/...@%[6]s` installs every first-party plugin), "+
			"or put it into one of those folders; `agent-worker plugins` lists what the daemon found",
			name, name, strings.Join(c.Dirs(), ", "), api.Module, name, api.InstallVersion())
	}
	names := append(slices.Clone(workflow.Backends), installed...)
	slices.Sort(names)
	names = slices.Compact(names)
	if best := workflow.Closest(name, names); best != "" {
		return "", api.Errorf(api.CodeInvalid, "unknown backend %q: did you mean %q?", word, best)
	}
	return "", api.Errorf(api.CodeInvalid, "unknown backend %q: use one of %s, or install agent-worker-backend-%s into a plugins.d folder",
		word, strings.Join(names, ", "), name)
}

// FromSpec validates a POST /agents body and fills in defaults (an sdk
// agent without a model gets defaultModel). It reports the first problem
// with what to write instead.
func FromSpec(s api.AgentSpec, c Catalog, defaultModel string) (store.Agent, error) {
	t := api.Target{Agent: s.Name, Workflow: s.Workflow, Tag: s.Tag}
	if t.Workflow == "" {
		t.Workflow = api.GlobalWorkflow
	}
	if t.Tag == "" {
		t.Tag = api.DefaultTag
	}
	if err := api.ValidateAgentName(t.Agent); err != nil {
		return store.Agent{}, err
	}
	if err := api.ValidateScopeName("workflow", t.Workflow); err != nil {
		return store.Agent{}, err
	}
	if err := api.ValidateScopeName("tag", t.Tag); err != nil {
		return store.Agent{}, err
	}
	backend, err := ResolveBackend(c, s.Backend)
	if err != nil {
		return store.Agent{}, err
	}
	if backend == "sdk" && s.Model == "" {
		s.Model = defaultModel
	}
	if strings.ContainsRune(s.System, 0) {
		return store.Agent{}, api.Errorf(api.CodeInvalid, "system prompt contains a NUL byte: is it a binary file? Give text")
	}
	if n := len(s.System); n > workflow.MaxSystemPromptBytes {
		return store.Agent{}, api.Errorf(api.CodeTooLarge, "%v", &workflow.SizeError{What: "system prompt", Size: int64(n), Limit: workflow.MaxSystemPromptBytes})
	}
	if err := ValidateSchedule(s.Schedule); err != nil {
		return store.Agent{}, err
	}
	if s.WakeupPrompt != "" && s.Schedule == "" {
		return store.Agent{}, api.Errorf(api.CodeInvalid, "wakeup_prompt needs a schedule: add --schedule 30m (or a cron expression)")
	}
	return store.Agent{
		Name: t.Agent, Workflow: t.Workflow, Tag: t.Tag,
		Backend: backend, Model: s.Model, System: s.System,
		Schedule: s.Schedule, WakeupPrompt: s.WakeupPrompt, Config: s.Config, Roles: s.Roles,
	}, nil
}

// Warnings are what a user should fix before the agent's next run that do
// not stop it from being registered: a backend that is no longer
// installed or cannot be used (the resolver's words), and an sdk agent
// whose model needs an API key that neither the daemon's environment nor
// the agent's env: sets. getenv reads the daemon's environment.
func Warnings(a store.Agent, c Catalog, getenv func(string) string) []string {
	if c != nil {
		if _, err := ResolveBackend(c, a.Backend); err != nil {
			return []string{err.Error()}
		}
	}
	if a.Backend != "sdk" {
		return nil
	}
	cfg := a.Config
	var provider, keyEnv string
	if p := cfg.Provider; p != nil {
		provider, keyEnv = p.Name, p.APIKeyEnv
	}
	key := llm.KeyEnv(a.Model, provider, keyEnv)
	if key == "" || getenv(key) != "" || cfg.Env[key] != "" {
		return nil
	}
	return []string{fmt.Sprintf("%s is not set in the daemon's environment, so runs of %s will fail: set it and restart the daemon (agent-worker stop --all), or use --backend mock to try things without a key",
		key, a.Model)}
}

// SandboxWarning says, for info, status and the console, that a's runs are
// not confined although the daemon confines runs (its sandbox mode: off);
// "" otherwise.
func SandboxWarning(a store.Agent, box api.SandboxInfo) string {
	if a.Config.Sandbox.Off() && box.State == api.SandboxOn {
		return "sandbox off for this agent (sandbox: {mode: off}): its runs can read and write whatever the daemon's user can, the daemon's token included"
	}
	return ""
}

// ValidateSchedule refuses a schedule the scheduler could not fire, with
// the one parser the scheduler fires from.
func ValidateSchedule(s string) error {
	if s == "" {
		return nil
	}
	if _, err := workflow.ParseSchedule(s); err != nil {
		return api.Errorf(api.CodeInvalid, "schedule %w", err)
	}
	return nil
}
