package efforts

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

// SkillInfo is sk as `skills list` and `skills show` print it.
func SkillInfo(sk *skill.Skill) api.Skill {
	out := api.Skill{Name: sk.Name, Description: sk.Description, Path: sk.Path, Directives: sk.Directives, Next: sk.Next,
		Phases: make([]tools.EffortPhase, len(sk.Phases))}
	for i, p := range sk.Phases {
		out.Phases[i] = phaseView(sk, p, 1)
	}
	return out
}

// SkillList is the skills of scope (nil: no workflow), looked for afresh.
func (s *Service) SkillList(ctx context.Context, scope *store.Scope) (api.SkillList, error) {
	set, dirs, err := s.Skills(ctx, scope, true)
	if err != nil {
		return api.SkillList{}, err
	}
	out := api.SkillList{Skills: []api.Skill{}, Folders: dirs}
	for _, name := range set.Names() {
		out.Skills = append(out.Skills, SkillInfo(set.Get(name)))
	}
	for _, p := range set.Problems {
		out.Problems = append(out.Problems, p.String())
	}
	for _, p := range set.Warnings {
		out.Warnings = append(out.Warnings, p.String())
	}
	return out, nil
}

// Row is e as the fleet view lists it.
func Row(e store.Effort) api.EffortRow {
	r := api.EffortRow{ID: e.ID, Agent: e.Agent.String(), Skill: e.Skill, Dir: e.Dir, Ordinal: e.Ordinal, State: string(e.State),
		Phase: e.Phase + 1, Phases: len(e.Phases), PhaseName: e.PhaseName, StartedAt: e.StartedAt, HeartbeatAt: e.HeartbeatAt,
		EndedAt: e.EndedAt, Reason: e.Reason}
	if c := e.Context; c != nil {
		r.ContextTokens, r.ContextWindow = c.Tokens, c.Window
	}
	return r
}

// List is the fleet view: the efforts f matches.
func (s *Service) List(ctx context.Context, f store.EffortFilter) (api.EffortList, error) {
	if f.Dir != "" {
		if !filepath.IsAbs(f.Dir) {
			return api.EffortList{}, contract.Errorf(contract.CodeInvalid, "dir %q must be an absolute path", f.Dir)
		}
		f.Dir = filepath.Clean(f.Dir)
	}
	es, err := s.cfg.DB.Efforts(ctx, f)
	if err != nil {
		return api.EffortList{}, err
	}
	out := api.EffortList{Efforts: make([]api.EffortRow, len(es))}
	for i, e := range es {
		out.Efforts[i] = Row(e)
	}
	return out, nil
}

// Show is effort id (or, with id "", agent's active one, else its
// latest) with its current phase and its history.
func (s *Service) Show(ctx context.Context, id string, agent *store.AgentKey) (api.EffortShow, error) {
	var e store.Effort
	var err error
	switch {
	case id != "":
		e, err = s.cfg.DB.GetEffort(ctx, id)
	case agent != nil:
		var ok bool
		if e, ok, err = s.cfg.DB.ActiveEffort(ctx, *agent); err == nil && !ok {
			es, lerr := s.cfg.DB.Efforts(ctx, store.EffortFilter{Workflow: agent.Workflow, Tag: agent.Tag, Agent: agent.Name, All: true})
			if lerr != nil {
				return api.EffortShow{}, lerr
			}
			if len(es) == 0 {
				return api.EffortShow{}, contract.Errorf(contract.CodeNotFound, "%s has no effort", agent)
			}
			e = es[len(es)-1]
		}
	default:
		return api.EffortShow{}, contract.Errorf(contract.CodeInvalid, "effort show needs an effort id or an agent")
	}
	if err != nil {
		return api.EffortShow{}, err
	}
	st, err := s.status(ctx, e, false)
	if err != nil {
		return api.EffortShow{}, err
	}
	hist, err := s.cfg.DB.EffortHistory(ctx, e.ID)
	if err != nil {
		return api.EffortShow{}, err
	}
	out := api.EffortShow{EffortRow: Row(e), Mode: e.Mode, Current: st.Phase, Dirs: e.Dirs, Directives: e.Directives,
		History: make([]api.EffortCheckpoint, len(hist))}
	for i, c := range hist {
		cp := api.EffortCheckpoint{N: c.N, Phase: c.Phase + 1, PhaseName: c.PhaseName, Kind: string(c.Kind), Notes: c.Notes, Run: c.Run, At: c.At}
		_ = json.Unmarshal(c.Proof, &cp.Proof) // the store checked both are JSON
		_ = json.Unmarshal(c.Evidence, &cp.Evidence)
		if len(cp.Proof) == 0 {
			cp.Proof = nil
		}
		if len(cp.Evidence) == 0 {
			cp.Evidence = nil
		}
		out.History[i] = cp
	}
	sk, err := parse(e)
	if err != nil {
		return api.EffortShow{}, err
	}
	for _, p := range sk.Phases {
		out.Timeline = append(out.Timeline, phaseView(sk, p, e.Ordinal))
	}
	// Evidence is observed only in phases the effort has reached.
	for phase := 0; phase <= e.Phase && phase < len(e.Phases); phase++ {
		obs, err := s.cfg.DB.Observations(ctx, e.ID, phase)
		if err != nil {
			return api.EffortShow{}, err
		}
		for _, o := range obs {
			out.Observations = append(out.Observations, api.EffortObservation{Phase: o.Phase + 1, N: o.N, Kind: string(o.Kind),
				Subject: o.Subject, Exit: o.Exit, Run: o.Run, At: o.At})
		}
	}
	out.Artifacts = presentArtifacts(e, sk)
	return out, nil
}

// logTail is how many of the log's last entries a resumed run is shown.
const logTail = 3

// maxDirective bounds a directive file brought into a run's context.
const maxDirective = 64 << 10

// RunContext is the agent's active effort as a run's starting context
// shows it (nil: it has none): the phase with its instructions and
// token, the notes so far, where it was left, and the directive files
// not brought in before (each once).
func (s *Service) RunContext(ctx context.Context, agent store.AgentKey) (*tools.EffortContext, error) {
	e, ok, err := s.cfg.DB.ActiveEffort(ctx, agent)
	if err != nil {
		return nil, err
	}
	if !ok {
		// The agent's effort: key starts its effort on its first run.
		if started, err := s.ensureFromWorkflow(ctx, agent); err != nil || !started {
			return nil, err
		}
		if e, ok, err = s.cfg.DB.ActiveEffort(ctx, agent); err != nil || !ok {
			return nil, err
		}
	}
	res, err := s.status(ctx, e, true)
	if err != nil {
		return nil, err
	}
	resume, err := s.cfg.DB.ResumeEffort(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	out := &tools.EffortContext{EffortResult: res}
	for _, c := range resume.Notes {
		out.Notes = append(out.Notes, tools.EffortNote{Phase: c.PhaseName, Notes: c.Notes, At: c.At})
	}
	last := resume.Last
	out.Here = fmt.Sprintf("you were here: effort %s (%s #%d on %s), phase %d of %d, %s, since %s",
		e.ID, e.Skill, e.Ordinal, e.Dir, e.Phase+1, len(e.Phases), e.PhaseName, last.At.UTC().Format("2006-01-02T15:04:05Z"))
	if tail := lastLines(res.Log, logTail); len(tail) > 0 {
		out.Here += "; last log entries:\n" + strings.Join(tail, "\n")
	}
	sk, err := parse(e)
	if err != nil {
		return nil, err
	}
	out.Directives, err = s.directives(ctx, e, sk, agent)
	return out, err
}

// directives are the skill's directive files found in the effort's
// directory and its parents up to the workspace root, not brought into
// the effort's context before.
func (s *Service) directives(ctx context.Context, e store.Effort, sk *skill.Skill, agent store.AgentKey) ([]tools.EffortDirective, error) {
	if len(sk.Directives) == 0 {
		return nil, nil
	}
	scope := agent.Scope()
	w, err := s.whereFor(ctx, &scope, agent.Name)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, dir := range append([]string{e.Dir}, e.Dirs...) {
		for _, d := range upTo(dir, w.roots) {
			for _, name := range sk.Directives {
				p := filepath.Join(d, name)
				if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() {
					found = append(found, p)
				}
			}
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	fresh, err := s.cfg.DB.AddEffortDirectives(ctx, e.ID, found...)
	if err != nil {
		return nil, err
	}
	var out []tools.EffortDirective
	for _, p := range fresh {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if len(b) > maxDirective {
			b = append(b[:maxDirective], "\n[cut: the file is longer]"...)
		}
		out = append(out, tools.EffortDirective{Path: p, Content: string(b)})
	}
	return out, nil
}

// upTo is dir and its parents up to the root it is in (only dir when it
// is in none).
func upTo(dir string, roots []string) []string {
	out := []string{dir}
	for _, root := range roots {
		if !within(dir, root) {
			continue
		}
		for d := dir; d != root; {
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
			out = append(out, d)
		}
		break
	}
	return out
}

// lastLines are the last n entries ("- " lines) of file.
func lastLines(file string, n int) []string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), store.MaxEffortNotes+256)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "- ") {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// ensureFromWorkflow starts the effort the agent's effort: key in its
// workflow file names, when it has one (Ensure: once).
func (s *Service) ensureFromWorkflow(ctx context.Context, agent store.AgentKey) (bool, error) {
	wf, err := s.cfg.DB.GetWorkflow(ctx, agent.Workflow, agent.Tag)
	if contract.ErrorCode(err) == contract.CodeNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	f := workflowSkills(wf.SourcePath, wf.ConfigYAML)
	if f == nil {
		return false, nil
	}
	for _, a := range f.Agents {
		if a.Name == agent.Name && a.Effort != nil {
			return s.Ensure(ctx, agent, a.Effort.Dir, a.Effort.Skill)
		}
	}
	return false, nil
}

// Directives are the directive files of agent's active effort not
// brought into its context before (each once, shared with its runs'
// RunContext): in the effort's directory, the directories it touched and
// their parents up to the workspace root. A live session's hooks inject
// them as its tool calls reach new directories (issue 44). None without
// an active effort.
func (s *Service) Directives(ctx context.Context, agent store.AgentKey) ([]tools.EffortDirective, error) {
	e, ok, err := s.cfg.DB.ActiveEffort(ctx, agent)
	if err != nil || !ok {
		return nil, err
	}
	sk, err := parse(e)
	if err != nil {
		return nil, err
	}
	return s.directives(ctx, e, sk, agent)
}

// LastLogEntry is the newest entry of e's log file ("" for none): what
// the agent last said of its progress.
func LastLogEntry(e store.Effort) string {
	tail := lastLines(filepath.Join(e.Dir, skill.ArtifactFile(e.Ordinal, e.Skill, "log")), 1)
	if len(tail) == 0 {
		return ""
	}
	return strings.TrimPrefix(tail[0], "- ")
}
