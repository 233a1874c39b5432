package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/host/runspec"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/llm"
	"github.com/agent-worker/agent-worker/store"
)

// Runner runs one attempt of a run (host/runner.Supervisor.Run).
type Runner interface {
	Run(ctx context.Context, spec runspec.RunSpec) (runspec.Outcome, error)
}

// Catalog finds a backend's plugin binary (host/catalog.Catalog.Lookup).
type Catalog interface {
	Lookup(kind, name string) (api.Plugin, error)
}

// Config is what a Service works with.
type Config struct {
	DB      *store.DB
	Runner  Runner
	Catalog Catalog
	// Home is the daemon's home: each scratch team works in a directory
	// of its own under replays/ there.
	Home string
	Log  hclog.Logger
}

// Service replays recorded runs.
type Service struct{ cfg Config }

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	return &Service{cfg: cfg}
}

// The backends a replay can serve: the sdk backend's model is replaced
// by the recording, the mock's model is its script.
const (
	backendSDK  = "sdk"
	backendMock = "mock"
)

// refusals say why the CLI backends' runs are not replayed.
var refusals = map[string]string{
	"claude": "the claude CLI talks to its model itself, and its transcript keeps what the CLI reported (text, tool calls), " +
		"not the model's answers with the ids and tools the CLI gave them, so there is nothing exact to serve back to it",
	"codex":  "the codex CLI talks to its model itself, and its transcript keeps what the CLI reported, not the model's answers",
	"cursor": "cursor-agent talks to Cursor's service itself, which no local server can stand in for",
}

// Replay runs the recorded run id again and compares the two. The run
// must have ended and its agent must still exist: the replay runs the
// agent's current definition.
func (s *Service) Replay(ctx context.Context, id string) (contract.Replay, error) {
	db := s.cfg.DB
	run, events, err := db.GetRun(ctx, id)
	if err != nil {
		return contract.Replay{}, err
	}
	if run.State == contract.RunRunning || run.State == contract.RunQueued {
		return contract.Replay{}, api.Errorf(api.CodeConflict, "run %s is still %s: replay it once it has ended", id, run.State)
	}
	switch run.Backend {
	case backendSDK, backendMock:
	default:
		why := refusals[run.Backend]
		if why == "" {
			why = "replay serves recorded model answers to the sdk backend and runs the mock's script; another backend's model is out of its reach"
		}
		return contract.Replay{}, api.Errorf(api.CodeInvalid, "run %s (backend %s) cannot be replayed: %s", id, run.Backend, why)
	}
	agent, err := db.GetAgent(ctx, run.Agent)
	if err != nil {
		if api.ErrorCode(err) == api.CodeNotFound {
			return contract.Replay{}, api.Errorf(api.CodeNotFound, "run %s's agent %s no longer exists: a replay runs the agent's current definition", id, display(run.Agent))
		}
		return contract.Replay{}, err
	}
	if agent.Backend != run.Backend {
		return contract.Replay{}, api.Errorf(api.CodeInvalid, "run %s was a %s run and %s now has backend %s: a replay needs the backend that was recorded",
			id, run.Backend, display(run.Agent), agent.Backend)
	}
	out := contract.Replay{Of: id, Backend: run.Backend}
	if p, err := s.cfg.Catalog.Lookup("backend", run.Backend); err != nil {
		return contract.Replay{}, err
	} else if run.PluginSHA256 != "" && p.SHA256 != run.PluginSHA256 {
		out.PluginChanged = fmt.Sprintf("the %s plugin changed since the recording (sha256 %s then, %s now%s): a divergence may be the plugin's doing",
			run.Backend, short(run.PluginSHA256), short(p.SHA256), version(p.Version))
	}
	prompt, rc, notes, err := recorded(events)
	if err != nil {
		return contract.Replay{}, api.Errorf(api.CodeInvalid, "run %s cannot be replayed: %v", id, err)
	}
	out.Notes = notes

	if run.Backend == backendSDK {
		turns, err := Turns(events)
		if err != nil {
			return contract.Replay{}, api.Errorf(api.CodeInvalid, "run %s cannot be replayed: its model answers cannot be rebuilt from its transcript: %v", id, err)
		}
		model, err := StartModel(turns)
		if err != nil {
			return contract.Replay{}, err
		}
		defer model.Close()
		agent.Config = pointAt(agent.Model, agent.Config, model.URL())
		defer func() {
			if served, extra := model.Served(); extra > 0 {
				out.Notes = append(out.Notes, fmt.Sprintf("the replay asked the model %d more time(s) than the recording's %d answer(s)", extra, served))
			}
		}()
	}
	if agent.Backend == backendMock {
		agent.Config = scriptFrom(ctx, db, agent)
	}

	scratch, err := s.scratch(ctx, run, agent)
	if err != nil {
		return contract.Replay{}, err
	}
	out.Agent = display(scratch.Key())
	inbox := make([]store.Message, 0, len(prompt.Inbox))
	for _, m := range prompt.Inbox {
		inbox = append(inbox, store.Message{Seq: m.Seq, Sender: m.From, To: m.To, Content: m.Content})
	}
	s.cfg.Log.Info("replaying run", "run", id, "agent", out.Agent)
	o, runErr := s.cfg.Runner.Run(ctx, runspec.RunSpec{Agent: scratch, Attempt: 1, InboxUntil: prompt.InboxUntilSeq, Inbox: inbox, Context: rc})
	if o.Run.ID == "" {
		return contract.Replay{}, runErr
	}
	out.Run = o.Run.ID
	replayRun, replayed, err := db.GetRun(context.WithoutCancel(ctx), o.Run.ID)
	if err != nil {
		return contract.Replay{}, err
	}
	out.State, out.Error = replayRun.State, replayRun.Error
	out.Divergence = Diverge(events, replayed)
	if out.Divergence == nil && replayRun.State != run.State {
		out.Divergence = &contract.Divergence{What: "end", Recorded: endText(run), Replayed: endText(replayRun)}
	}
	return out, nil
}

// recorded reads what the run was given: its prompt event (the inbox)
// and its context event, nil with a note when the transcript has none.
func recorded(events []store.RunEvent) (api.PromptEvent, *backend.RunContext, []string, error) {
	var p api.PromptEvent
	var rc *backend.RunContext
	found := false
	for _, e := range events {
		switch e.Kind {
		case api.RunEventPrompt:
			if err := json.Unmarshal([]byte(e.Data), &p); err != nil {
				return p, nil, nil, fmt.Errorf("its prompt event: %w", err)
			}
			found = true
		case contract.RunEventContext:
			var c backend.RunContext
			var big struct {
				Truncated int `json:"truncated"`
			}
			if json.Unmarshal([]byte(e.Data), &big) == nil && big.Truncated > 0 {
				return p, nil, nil, fmt.Errorf("its starting context (%d bytes) was too large to record", big.Truncated)
			}
			if err := json.Unmarshal([]byte(e.Data), &c); err != nil {
				return p, nil, nil, fmt.Errorf("its context event: %w", err)
			}
			rc = &c
		}
	}
	if !found {
		return p, nil, nil, errors.New("its transcript has no prompt event")
	}
	var notes []string
	if p.Omitted > 0 {
		notes = append(notes, fmt.Sprintf("%d inbox message(s) of the recording were not kept; the replay is shown the rest", p.Omitted))
	}
	if rc == nil {
		notes = append(notes, "the run's starting context (channel tail, notes, documents) was not recorded: the replay is shown its inbox and the scratch team's empty channel")
	}
	return p, rc, notes, nil
}

// pointAt points an sdk agent's model at the replay's server: its
// provider's base URL, and a stand-in key, so no real key leaves.
func pointAt(model string, c backend.AgentConfig, url string) backend.AgentConfig {
	c.Env = maps.Clone(c.Env)
	if c.Env == nil {
		c.Env = map[string]string{}
	}
	name := ""
	if c.Provider != nil {
		p := *c.Provider
		p.BaseURL = url
		c.Provider, name = &p, p.Name
	} else {
		prefix, _, ok := strings.Cut(model, "/")
		if !ok {
			prefix = llm.GuessProvider(model)
		}
		name = prefix
	}
	c.Env[strings.ToUpper(strings.ReplaceAll(name, "-", "_"))+"_BASE_URL"] = url
	keyEnv := ""
	if c.Provider != nil {
		keyEnv = llm.KeyEnv(model, c.Provider.Name, c.Provider.APIKeyEnv)
	} else {
		keyEnv = llm.KeyEnv(model, "", "")
	}
	if keyEnv != "" {
		c.Env[keyEnv] = "replay"
	}
	return c
}

// scriptFrom makes a mock agent's relative script_file absolute against
// its workflow's directory: the replay works in a scratch directory.
func scriptFrom(ctx context.Context, db *store.DB, a store.Agent) backend.AgentConfig {
	c := a.Config
	raw, ok := c.Extra["script_file"]
	var path string
	if !ok || json.Unmarshal(raw, &path) != nil || path == "" || filepath.IsAbs(path) {
		return c
	}
	wf, err := db.GetWorkflow(ctx, a.Workflow, a.Tag)
	if err != nil || wf.Workdir == "" {
		return c
	}
	c.Extra = maps.Clone(c.Extra)
	c.Extra["script_file"], _ = json.Marshal(filepath.Join(wf.Workdir, path))
	return c
}

// scratch makes the replay's team: a paused tag of the run's workflow
// (so that the scheduler never starts a run in it, even after a restart)
// with the team's agents as they are defined now, working in a new
// directory of its own (replays/<wf>/<tag> in the daemon's home), never
// the workflow's. It returns the replayed agent.
func (s *Service) scratch(ctx context.Context, run store.Run, agent store.Agent) (store.Agent, error) {
	db := s.cfg.DB
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	tag := "replay-" + hex.EncodeToString(b)
	wf, err := db.GetWorkflow(ctx, run.Agent.Workflow, run.Agent.Tag)
	if err != nil {
		return store.Agent{}, err
	}
	dir := filepath.Join(s.cfg.Home, "replays", wf.Name, tag)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return store.Agent{}, fmt.Errorf("scratch directory: %w", err)
	}
	if _, err := db.CreateWorkflow(ctx, store.Workflow{Name: wf.Name, Tag: tag, State: contract.WorkflowPaused, Workdir: dir,
		Error:            fmt.Sprintf("a replay of run %s: a scratch team, where nothing runs on its own", run.ID),
		LongMessageChars: wf.LongMessageChars}); err != nil {
		return store.Agent{}, err
	}
	team, err := db.ListAgents(ctx, store.AgentFilter{Workflow: wf.Name, Tag: wf.Tag})
	if err != nil {
		return store.Agent{}, err
	}
	var me store.Agent
	for _, a := range team {
		if a.Name == agent.Name {
			a = agent // with the replay's changes
		}
		c := store.Agent{Name: a.Name, Workflow: wf.Name, Tag: tag, Backend: a.Backend, Model: a.Model, System: a.System, Config: a.Config, Roles: a.Roles}
		created, err := db.CreateAgent(ctx, c)
		if err != nil {
			return store.Agent{}, err
		}
		if a.Name == agent.Name {
			me = created
		}
	}
	if me.Name == "" {
		return store.Agent{}, api.Errorf(api.CodeNotFound, "%s is not in %s's team any more", agent.Name, wf.Name)
	}
	return me, nil
}

func display(k store.AgentKey) string {
	return api.Target{Agent: k.Name, Workflow: k.Workflow, Tag: k.Tag}.Display()
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

func version(v string) string {
	if v == "" {
		return ""
	}
	return ", version " + v + " now"
}

func endText(r store.Run) string {
	if r.Error != "" {
		return string(r.State) + ": " + r.Error
	}
	return string(r.State)
}
