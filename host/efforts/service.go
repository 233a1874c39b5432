package efforts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

// ProjectDirs gives an agent a working directory of its own (a git
// worktree), which an effort's directory may be in too
// (host/worktrees.Service).
type ProjectDirs interface {
	ProjectDir(ctx context.Context, wf store.Workflow, agent string) (dir string, ok bool, err error)
}

// Config is what the service is built from.
type Config struct {
	DB *store.DB
	// Bus gets an EventEffort for every change of an effort; nil: none.
	Bus *team.Bus
	// ProjectDirs, when set, adds an agent's worktree to where its
	// efforts may work.
	ProjectDirs ProjectDirs
	// UserHome holds ~/.agent-worker/skills/; "" searches no user folder.
	UserHome string
	// Logged is told of each effort log entry (host/gate.Gate.Logged, which
	// resets the heartbeat gate's count); nil: nobody.
	Logged func(effortID string)
	Now    func() time.Time
	Log    hclog.Logger
}

// Service walks efforts. Its methods act as the agent they are given:
// the MCP server passes its session's agent, the HTTP API the target the
// user named.
type Service struct {
	cfg  Config
	reg  *registry
	sign *signer
}

// New builds the service; it reads (or makes) the token key in the store.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	sign, err := loadSigner(ctx, cfg.DB.SharedSetting)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, reg: newRegistry(cfg.Log), sign: sign}, nil
}

// Run watches the skills folders for changes until ctx ends.
func (s *Service) Run(ctx context.Context) { s.reg.run(ctx) }

// Problems are the skill files that could not be read, for the daemon's
// status.
func (s *Service) Problems() []string { return s.reg.problems() }

// where is what an agent's efforts may reach: its workflow's skills and
// the directories its efforts may work in (none: anywhere).
type where struct {
	folders []string
	roots   []string
}

// whereFor reads the workflow of scope (nil: no workflow).
func (s *Service) whereFor(ctx context.Context, scope *store.Scope, agent string) (where, error) {
	var (
		wfSkills []string
		project  string
		roots    []string
	)
	if scope != nil {
		wf, err := s.cfg.DB.GetWorkflow(ctx, scope.Workflow, scope.Tag)
		switch {
		case contract.ErrorCode(err) == contract.CodeNotFound:
		case err != nil:
			return where{}, err
		default:
			if f := workflowSkills(wf.SourcePath, wf.ConfigYAML); f != nil {
				wfSkills = f.Skills
				if project == "" {
					project = f.Dir
				}
			}
			if wf.Workdir != "" {
				project = wf.Workdir
			}
			if project != "" {
				roots = append(roots, project)
			}
			if agent != "" && s.cfg.ProjectDirs != nil {
				if dir, ok, err := s.cfg.ProjectDirs.ProjectDir(ctx, wf, agent); err == nil && ok {
					roots = append(roots, dir)
				}
			}
		}
	}
	return where{folders: folders(wfSkills, project, s.cfg.UserHome), roots: roots}, nil
}

// Skills are the skills the agents of scope (nil: no workflow) find, and
// the folders searched; fresh looks again rather than use what was found.
func (s *Service) Skills(ctx context.Context, scope *store.Scope, fresh bool) (*skill.Set, []string, error) {
	w, err := s.whereFor(ctx, scope, "")
	if err != nil {
		return nil, nil, err
	}
	return s.reg.discover(w.folders, fresh), w.folders, nil
}

// findSkill is the skill called name among set's, read again from its
// file so that the snapshot is the bytes parsed.
func findSkill(set *skill.Set, folders []string, name string) (*skill.Skill, []byte, error) {
	sk := set.Get(name)
	if sk == nil {
		msg := fmt.Sprintf("no skill %q in %s", name, strings.Join(folders, ", "))
		if c := set.Closest(name); c != "" {
			msg += fmt.Sprintf(": did you mean %s?", c)
		} else if names := set.Names(); len(names) > 0 {
			msg += ": the skills are " + strings.Join(names, ", ")
		}
		return nil, nil, contract.Errorf(contract.CodeNotFound, "%s", msg)
	}
	content, err := os.ReadFile(sk.Path)
	if err != nil {
		return nil, nil, contract.Errorf(contract.CodeNotFound, "read skill %s: %v", name, err)
	}
	sk, err = skill.Parse(sk.Path, content)
	if err != nil {
		return nil, nil, contract.Errorf(contract.CodeInvalid, "skill %s changed and no longer parses: %v", name, err)
	}
	return sk, content, nil
}

// modeRE is what a mode may be: a short word.
var modeRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// StartRequest starts an effort.
type StartRequest struct {
	Agent store.AgentKey
	Dir   string
	Skill string
	Mode  string
	// Run is the run that asked, "" for the user.
	Run string
}

// Start starts an effort of skill on dir for the agent, which must exist
// and have none active. It answers the first phase, the directory's
// earlier efforts' debriefs and the first continue token.
func (s *Service) Start(ctx context.Context, req StartRequest) (tools.EffortResult, error) {
	req.Skill, req.Mode = strings.TrimSpace(req.Skill), strings.TrimSpace(req.Mode)
	if req.Skill == "" {
		return tools.EffortResult{}, contract.Errorf(contract.CodeInvalid, "effort start needs a skill: skills list shows them")
	}
	if req.Mode != "" && !modeRE.MatchString(req.Mode) {
		return tools.EffortResult{}, contract.Errorf(contract.CodeInvalid, "mode %q is not a word: use up to 32 lowercase letters, digits, - or _", req.Mode)
	}
	if _, err := s.cfg.DB.GetAgent(ctx, req.Agent); err != nil {
		return tools.EffortResult{}, err
	}
	scope := req.Agent.Scope()
	w, err := s.whereFor(ctx, &scope, req.Agent.Name)
	if err != nil {
		return tools.EffortResult{}, err
	}
	dir, err := checkDir(req.Dir, w.roots)
	if err != nil {
		return tools.EffortResult{}, err
	}
	sk, content, err := findSkill(s.reg.discover(w.folders, false), w.folders, req.Skill)
	if err != nil {
		return tools.EffortResult{}, err
	}
	nonce := newNonce()
	e, prev, err := s.cfg.DB.StartEffort(ctx, store.NewEffort{Agent: req.Agent, Dir: dir, Skill: sk.Name,
		Snapshot: skill.Snapshot(sk.Path, content), Phases: sk.PhaseNames(), Mode: req.Mode, Nonce: nonce, Run: req.Run})
	if err != nil {
		return tools.EffortResult{}, err
	}
	res := s.result(e, sk, nil, true)
	for _, d := range prev {
		res.Debriefs = append(res.Debriefs, debrief(dir, d))
	}
	res.Earlier = s.earlier(ctx, scope, req.Agent.Name, dir)
	s.publish(e, "started "+e.PhaseName)
	return res, nil
}

// maxEarlier is how many search hits an effort's start brings.
const maxEarlier = 3

// earlier is what the team's search finds about dir, as its agent may
// see it: the directory's name as a phrase, best first. Search is a help,
// not a condition: a failed one is logged and the start goes on.
func (s *Service) earlier(ctx context.Context, scope store.Scope, agent, dir string) []tools.SearchHit {
	name := strings.Trim(filepath.Base(dir), `"*`)
	if name == "" || name == "." || name == string(filepath.Separator) {
		return nil
	}
	hits, err := s.cfg.DB.Search(ctx, scope, store.SearchOptions{Query: `"` + name + `"`, Limit: maxEarlier, Viewer: agent})
	if err != nil {
		s.cfg.Log.Warn("effort start: search for earlier notes", "dir", dir, "err", err)
		return nil
	}
	out := make([]tools.SearchHit, 0, len(hits))
	for _, h := range hits {
		out = append(out, h.Tool())
	}
	return out
}

// debrief is what effort d left in dir: its debrief file, else its last
// notes.
func debrief(dir string, d store.Debrief) tools.EffortDebrief {
	out := tools.EffortDebrief{Effort: d.ID, Ordinal: d.Ordinal, Skill: d.Skill, Text: d.Notes}
	file := filepath.Join(dir, skill.ArtifactFile(d.Ordinal, d.Skill, skill.KindDebrief))
	if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
		out.File, out.Text = file, string(b)
	}
	return out
}

// checkDir cleans dir and checks it is a directory inside one of roots
// (when there are any), after symbolic links too.
func checkDir(dir string, roots []string) (string, error) {
	dir = strings.TrimSpace(dir)
	if dir == "" || !filepath.IsAbs(dir) {
		return "", contract.Errorf(contract.CodeInvalid, "dir %q must be an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return "", contract.Errorf(contract.CodeInvalid, "dir %s is not a directory", dir)
	}
	if len(roots) == 0 {
		return dir, nil
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", contract.Errorf(contract.CodeInvalid, "dir %s: %v", dir, err)
	}
	for _, root := range roots {
		realRoot, err := filepath.EvalSymlinks(root)
		if err != nil {
			realRoot = root
		}
		if within(dir, filepath.Clean(root)) && within(real, realRoot) {
			return dir, nil
		}
	}
	return "", contract.Errorf(contract.CodePermission, "dir %s is outside the workspace (%s): an effort works inside it, symbolic links followed",
		dir, strings.Join(roots, ", "))
}

// within says whether path is root or under it.
func within(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// parse is the effort's skill as it was when it started.
func parse(e store.Effort) (*skill.Skill, error) {
	sk, err := skill.FromSnapshot(e.Snapshot)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInternal, "effort %s: its skill snapshot: %v", e.ID, err)
	}
	if len(sk.Phases) != len(e.Phases) {
		return nil, contract.Errorf(contract.CodeInternal, "effort %s: its snapshot has %d phases, the effort %d", e.ID, len(sk.Phases), len(e.Phases))
	}
	return sk, nil
}

// result is e as the tools answer it: the current phase while active
// (with what its evidence still misses, when known) and, for its own
// agent, the token.
func (s *Service) result(e store.Effort, sk *skill.Skill, missing []string, withToken bool) tools.EffortResult {
	res := tools.EffortResult{Effort: e.ID, Agent: e.Agent.String(), Skill: e.Skill, Dir: e.Dir, Ordinal: e.Ordinal,
		Mode: e.Mode, State: string(e.State), HeartbeatAt: e.HeartbeatAt, Next: sk.Next,
		Log: filepath.Join(e.Dir, skill.ArtifactFile(e.Ordinal, e.Skill, "log"))}
	if e.State == contract.EffortActive {
		p := phaseView(sk, sk.Phases[e.Phase], e.Ordinal)
		p.Missing = missing
		res.Phase = &p
		if withToken {
			res.Token = s.sign.Sign(token{Effort: e.ID, Phase: e.Phase, Nonce: e.Nonce})
		}
	}
	return res
}

// phaseView is phase p as an agent is shown it.
func phaseView(sk *skill.Skill, p *skill.Phase, ordinal int) tools.EffortPhase {
	v := tools.EffortPhase{N: p.Index + 1, Of: len(sk.Phases), Name: p.Name, Instructions: strings.TrimSpace(sk.Expand(p.Instructions, ordinal))}
	for _, f := range p.Proof {
		v.Proof = append(v.Proof, tools.EffortProofField{Name: f.Name, Type: string(f.Type), Description: f.Description, Optional: f.Optional})
	}
	for _, ev := range p.Evidence {
		v.Evidence = append(v.Evidence, ev.String())
	}
	for _, kind := range p.Artifacts {
		v.Artifacts = append(v.Artifacts, skill.ArtifactFile(ordinal, sk.Name, kind))
	}
	if t := p.Tools; t != nil {
		var parts []string
		if t.Restricted {
			parts = append(parts, "allow only "+ruleTexts(t.Allow))
		}
		if len(t.Deny) > 0 {
			parts = append(parts, "deny "+ruleTexts(t.Deny))
		}
		v.Tools = strings.Join(parts, "; ")
	}
	return v
}

func ruleTexts(rs []skill.Rule) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Text
	}
	return strings.Join(out, ", ")
}

// publish tells the bus what happened to e; the channel stays quiet.
func (s *Service) publish(e store.Effort, what string) {
	if s.cfg.Bus != nil {
		s.cfg.Bus.Publish(team.Event{Kind: team.EventEffort, Agent: e.Agent, State: e.ID + " " + what})
	}
}

// active is the agent's active effort, or a not-found error that says
// how to start one.
func (s *Service) active(ctx context.Context, key store.AgentKey) (store.Effort, error) {
	e, ok, err := s.cfg.DB.ActiveEffort(ctx, key)
	if err != nil {
		return store.Effort{}, err
	}
	if !ok {
		return store.Effort{}, contract.Errorf(contract.CodeNotFound, "%s has no active effort: start one with effort_start (agent-worker effort start)", key)
	}
	return e, nil
}

// observed are the observations of e's current phase as workflow/skill
// reads them.
func (s *Service) observed(ctx context.Context, e store.Effort) ([]skill.Observation, error) {
	obs, err := s.cfg.DB.Observations(ctx, e.ID, e.Phase)
	if err != nil {
		return nil, err
	}
	out := make([]skill.Observation, 0, len(obs))
	for _, o := range obs {
		so := skill.Observation{Kind: skill.EvidenceKind(o.Kind), At: o.At}
		switch o.Kind {
		case store.ObservedShell:
			so.Command = o.Subject
			so.Exit = -1 // not reported: proves only an `exit: any` requirement, never `exit: 0`
			if o.Exit != nil {
				so.Exit = *o.Exit
			}
		case store.ObservedFile:
			so.Path = relTo(e.Dir, o.Subject)
		case store.ObservedTool:
			so.Tool = o.Subject
		}
		out = append(out, so)
	}
	return out, nil
}

// relTo is path relative to dir with / separators, when it is inside.
func relTo(dir, path string) string {
	if filepath.IsAbs(path) {
		if rel, err := filepath.Rel(dir, path); err == nil && within(path, dir) {
			path = rel
		}
	}
	return filepath.ToSlash(path)
}

// missingEvidence is what the phase's evidence still lacks, in words.
func missingEvidence(p *skill.Phase, obs []skill.Observation) (skill.Findings, []string) {
	fs := p.CheckEvidence(obs)
	var out []string
	for _, m := range fs.Missing() {
		out = append(out, m.String())
	}
	return fs, out
}

// evidenceJSON is what met the phase's evidence, for its checkpoint.
func evidenceJSON(fs skill.Findings) json.RawMessage {
	type met struct {
		Evidence string `json:"evidence"`
		Kind     string `json:"kind"`
		Subject  string `json:"subject"`
		Exit     *int   `json:"exit,omitempty"`
	}
	out := []met{}
	for _, f := range fs {
		if f.By == nil {
			continue
		}
		m := met{Evidence: f.Evidence.String(), Kind: string(f.By.Kind)}
		switch f.By.Kind {
		case skill.EvidenceShell:
			exit := f.By.Exit
			m.Subject, m.Exit = f.By.Command, &exit
		case skill.EvidenceFile:
			m.Subject = f.By.Path
		default:
			m.Subject = f.By.Tool
		}
		out = append(out, m)
	}
	b, _ := json.Marshal(out) // plain structs always encode
	return b
}

// refusal joins what keeps a phase from ending into one error that lists
// all of it.
func refusal(e store.Effort, errs ...error) error {
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return contract.Errorf(contract.CodeInvalid, "%s cannot leave phase %d of %d, %s:\n%s", e.ID, e.Phase+1, len(e.Phases), e.PhaseName,
		"- "+strings.Join(msgs, "\n- "))
}

// errors.As keeps the ProofError's own list; this joins its lines.
func proofErr(err error) error {
	var pe *skill.ProofError
	if errors.As(err, &pe) {
		return fmt.Errorf("proof: %s", strings.Join(pe.Problems, "; "))
	}
	return err
}
