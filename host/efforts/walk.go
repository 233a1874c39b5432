package efforts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

// Proof is a phase's proof as it came: typed, from JSON (MCP), or as
// text, from the CLI's --proof k=v. At most one is set.
type Proof struct {
	Typed map[string]any
	Text  map[string]string
}

func (p Proof) check(ph *skill.Phase) (map[string]any, error) {
	if p.Text != nil {
		return ph.CheckProofStrings(p.Text)
	}
	typed := p.Typed
	if typed == nil {
		typed = map[string]any{}
	}
	return ph.CheckProof(typed)
}

// Step leaves a phase of an effort.
type Step struct {
	Agent store.AgentKey
	// Token is the phase's continue token; "" (the user, through the
	// CLI) takes the effort's current one, so its single use still holds.
	Token string
	Proof Proof
	Notes string
	Run   string
}

// turn is the effort a step acts on: the agent's, in the phase the token
// names with the token's nonce. A token of another daemon, another
// agent's, or one already used is refused, saying where the effort is.
func (s *Service) turn(ctx context.Context, agent store.AgentKey, text string) (store.Effort, error) {
	if strings.TrimSpace(text) == "" {
		e, err := s.active(ctx, agent)
		if err != nil {
			return store.Effort{}, err
		}
		return e, nil
	}
	t, err := s.sign.Verify(text)
	if err != nil {
		return store.Effort{}, err
	}
	e, err := s.cfg.DB.GetEffort(ctx, t.Effort)
	if err != nil {
		return store.Effort{}, err
	}
	if e.Agent != agent {
		return store.Effort{}, contract.Errorf(contract.CodePermission, "the token is for %s's effort %s, not %s's", e.Agent, e.ID, agent)
	}
	switch {
	case e.State != contract.EffortActive:
		return store.Effort{}, contract.Errorf(contract.CodeConflict, "already used: effort %s is %s", e.ID, e.State)
	case e.Phase != t.Phase || e.Nonce != t.Nonce:
		return store.Effort{}, contract.Errorf(contract.CodeConflict, "already used: the effort is at phase %d of %d, %s (effort_status shows its token)",
			e.Phase+1, len(e.Phases), e.PhaseName)
	}
	return e, nil
}

// Continue ends the effort's current phase with its proof, once the
// daemon has observed the phase's evidence, and answers the next phase
// with a new token; in the last phase it finishes the effort. A refusal
// lists everything missing and changes nothing.
func (s *Service) Continue(ctx context.Context, st Step) (tools.EffortResult, error) {
	if err := checkNotes(st.Notes); err != nil {
		return tools.EffortResult{}, err
	}
	e, err := s.turn(ctx, st.Agent, st.Token)
	if err != nil {
		return tools.EffortResult{}, err
	}
	if e.LastPhase() {
		return s.finish(ctx, e, FinishRequest{Agent: st.Agent, Proof: st.Proof, Notes: st.Notes, Run: st.Run})
	}
	sk, err := parse(e)
	if err != nil {
		return tools.EffortResult{}, err
	}
	ph := sk.Phases[e.Phase]
	proof, fs, err := s.checkPhase(ctx, e, ph, st.Proof)
	if err != nil {
		return tools.EffortResult{}, err
	}
	next, err := s.cfg.DB.AdvanceEffort(ctx, store.Advance{ID: e.ID, From: e.Phase, Nonce: e.Nonce, NewNonce: newNonce(),
		Proof: proof, Notes: st.Notes, Evidence: evidenceJSON(fs), Run: st.Run})
	if err != nil {
		if contract.ErrorCode(err) == contract.CodeConflict {
			return tools.EffortResult{}, contract.Errorf(contract.CodeConflict, "already used: %v", err)
		}
		return tools.EffortResult{}, err
	}
	s.publish(next, "entered "+next.PhaseName)
	return s.result(next, sk, nil, true), nil
}

// checkPhase checks the proof and the evidence of phase ph together, so
// that a refusal names all that is missing.
func (s *Service) checkPhase(ctx context.Context, e store.Effort, ph *skill.Phase, p Proof) (json.RawMessage, skill.Findings, error) {
	typed, perr := p.check(ph)
	obs, err := s.observed(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	fs := ph.CheckEvidence(obs)
	var eerr error
	if err := fs.Err(ph.Name); err != nil {
		// A line per requirement, each an item of the refusal's list.
		eerr = fmt.Errorf("evidence: %s", strings.ReplaceAll(err.Error(), "\n", "\n- evidence: "))
	}
	if perr != nil {
		perr = proofErr(perr)
	}
	if err := refusal(e, perr, eerr); err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(typed)
	if err != nil {
		return nil, nil, contract.Errorf(contract.CodeInvalid, "proof: %v", err)
	}
	return b, fs, nil
}

func checkNotes(notes string) error {
	if len(notes) > store.MaxEffortNotes {
		return contract.Errorf(contract.CodeTooLarge, "notes of %d bytes: at most %d", len(notes), store.MaxEffortNotes)
	}
	return nil
}

// FinishRequest ends an effort: finished from its last phase with that
// phase's proof (and evidence observed), or abandoned with a reason.
type FinishRequest struct {
	Agent   store.AgentKey
	Token   string
	Abandon bool
	Reason  string
	Notes   string
	Proof   Proof
	Run     string
}

// Finish finishes or abandons the agent's effort.
func (s *Service) Finish(ctx context.Context, f FinishRequest) (tools.EffortResult, error) {
	if err := checkNotes(f.Notes); err != nil {
		return tools.EffortResult{}, err
	}
	if f.Abandon && strings.TrimSpace(f.Reason) == "" {
		return tools.EffortResult{}, contract.Errorf(contract.CodeInvalid, "abandon needs a reason: say why in a sentence")
	}
	if !f.Abandon && f.Reason != "" {
		return tools.EffortResult{}, contract.Errorf(contract.CodeInvalid, "a reason is for abandoning: add abandon, or leave the reason out")
	}
	e, err := s.turn(ctx, f.Agent, f.Token)
	if err != nil {
		return tools.EffortResult{}, err
	}
	return s.finish(ctx, e, f)
}

func (s *Service) finish(ctx context.Context, e store.Effort, f FinishRequest) (tools.EffortResult, error) {
	sk, err := parse(e)
	if err != nil {
		return tools.EffortResult{}, err
	}
	end := store.Finish{ID: e.ID, Nonce: e.Nonce, Abandon: f.Abandon, Reason: f.Reason, Notes: f.Notes, Run: f.Run}
	if !f.Abandon {
		if !e.LastPhase() {
			return tools.EffortResult{}, contract.Errorf(contract.CodeConflict, "%s is in phase %d of %d, %s: phases are walked in order, finish comes after the last one, %s; leave this one with effort_continue",
				e.ID, e.Phase+1, len(e.Phases), e.PhaseName, e.Phases[len(e.Phases)-1])
		}
		proof, fs, err := s.checkPhase(ctx, e, sk.Phases[e.Phase], f.Proof)
		if err != nil {
			return tools.EffortResult{}, err
		}
		end.Proof, end.Evidence = proof, evidenceJSON(fs)
	}
	done, err := s.cfg.DB.FinishEffort(ctx, end)
	if err != nil {
		if contract.ErrorCode(err) == contract.CodeConflict {
			return tools.EffortResult{}, contract.Errorf(contract.CodeConflict, "already used: %v", err)
		}
		return tools.EffortResult{}, err
	}
	s.publish(done, string(done.State))
	return s.result(done, sk, nil, false), nil
}

// Log appends a dated line to the effort's log file in its directory
// (<ordinal>_<SKILL>_LOG.md, made with a heading the first time) and
// counts as a sign of life.
func (s *Service) Log(ctx context.Context, agent store.AgentKey, text string) (tools.EffortResult, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return tools.EffortResult{}, contract.Errorf(contract.CodeInvalid, "effort log needs text: one entry, e.g. a decision and why")
	}
	if err := checkNotes(text); err != nil {
		return tools.EffortResult{}, err
	}
	e, err := s.active(ctx, agent)
	if err != nil {
		return tools.EffortResult{}, err
	}
	sk, err := parse(e)
	if err != nil {
		return tools.EffortResult{}, err
	}
	file := filepath.Join(e.Dir, skill.ArtifactFile(e.Ordinal, e.Skill, "log"))
	var b strings.Builder
	if _, err := os.Stat(file); os.IsNotExist(err) {
		fmt.Fprintf(&b, "# %s log of effort %d on %s\n\n", e.Skill, e.Ordinal, e.Dir)
	}
	// One line per entry: a newline in the text would start a new one.
	fmt.Fprintf(&b, "- %s %s\n", s.cfg.Now().UTC().Format("2006-01-02T15:04:05Z"), strings.Join(strings.Fields(text), " "))
	fh, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return tools.EffortResult{}, contract.Errorf(contract.CodeInvalid, "effort log: %v", err)
	}
	_, werr := fh.WriteString(b.String())
	if err := fh.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return tools.EffortResult{}, contract.Errorf(contract.CodeInternal, "effort log: %v", werr)
	}
	if err := s.cfg.DB.HeartbeatEffort(ctx, e.ID, s.cfg.Now(), nil); err != nil {
		return tools.EffortResult{}, err
	}
	if s.cfg.Logged != nil {
		s.cfg.Logged(e.ID)
	}
	s.publish(e, "logged")
	return s.result(e, sk, nil, false), nil
}

// Status is the agent's active effort: its phase, what the phase needs
// and what of its evidence is still missing, and (for its own agent,
// withToken) the token again.
func (s *Service) Status(ctx context.Context, agent store.AgentKey, withToken bool) (tools.EffortResult, error) {
	e, err := s.active(ctx, agent)
	if err != nil {
		return tools.EffortResult{}, err
	}
	return s.status(ctx, e, withToken)
}

func (s *Service) status(ctx context.Context, e store.Effort, withToken bool) (tools.EffortResult, error) {
	sk, err := parse(e)
	if err != nil {
		return tools.EffortResult{}, err
	}
	var missing []string
	if e.State == contract.EffortActive {
		obs, err := s.observed(ctx, e)
		if err != nil {
			return tools.EffortResult{}, err
		}
		_, missing = missingEvidence(sk.Phases[e.Phase], obs)
	}
	return s.result(e, sk, missing, withToken), nil
}

// Ensure starts the effort an agent's effort: key names, unless the agent
// has an active effort or has already had one of that skill on that
// directory: so a restarted daemon, or a later run, never starts a
// second. It reports whether it started one.
func (s *Service) Ensure(ctx context.Context, agent store.AgentKey, dir, skillName string) (bool, error) {
	if _, ok, err := s.cfg.DB.ActiveEffort(ctx, agent); err != nil || ok {
		return false, err
	}
	had, err := s.cfg.DB.Efforts(ctx, store.EffortFilter{Dir: filepath.Clean(dir), Workflow: agent.Workflow, Tag: agent.Tag, Agent: agent.Name, All: true})
	if err != nil {
		return false, err
	}
	for _, e := range had {
		if e.Skill == skillName {
			return false, nil
		}
	}
	if _, err := s.Start(ctx, StartRequest{Agent: agent, Dir: dir, Skill: skillName}); err != nil {
		if contract.ErrorCode(err) == contract.CodeConflict {
			return false, nil // another member started it meanwhile
		}
		return false, err
	}
	return true, nil
}
