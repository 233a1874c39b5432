package console

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
)

// Where a phase of an effort stands on its page.
const (
	phaseDone      = "done"
	phaseCurrent   = "current"
	phaseToCome    = "to come"
	phaseAbandoned = "abandoned"
	phaseSkipped   = "not reached"
)

// phaseRow is one phase of an effort's timeline: the skill's phase, where
// the effort stands with it, its checkpoints and what was observed in it.
type phaseRow struct {
	api.EffortPhase
	Status      string
	Checkpoints []checkpointRow
	Observed    []api.EffortObservation
}

// Class is Status as a CSS class name.
func (p phaseRow) Class() string { return strings.ReplaceAll(p.Status, " ", "-") }

// checkpointRow is a checkpoint with its proof in a fixed order and the
// evidence that was met, as the page shows them.
type checkpointRow struct {
	api.EffortCheckpoint
	ProofFields []proofField
	Met         []metEvidence
}

type proofField struct{ Name, Value string }

// metEvidence is one evidence requirement and the observation that met
// it, as the store keeps it with a checkpoint.
type metEvidence struct {
	Evidence string `json:"evidence"`
	Kind     string `json:"kind"`
	Subject  string `json:"subject"`
	Exit     *int   `json:"exit"`
}

// phaseStatus is where phase n (from 1) stands in effort e.
func phaseStatus(e api.EffortRow, n int) string {
	switch {
	case e.State == "finished" || n < e.Phase:
		return phaseDone
	case n > e.Phase && e.State == "abandoned":
		return phaseSkipped
	case n > e.Phase:
		return phaseToCome
	case e.State == "abandoned":
		return phaseAbandoned
	}
	return phaseCurrent
}

// timeline lays the effort's history and observations along its phases.
func timeline(s api.EffortShow) []phaseRow {
	rows := make([]phaseRow, len(s.Timeline))
	for i, p := range s.Timeline {
		rows[i] = phaseRow{EffortPhase: p, Status: phaseStatus(s.EffortRow, p.N)}
	}
	at := func(n int) *phaseRow {
		if n < 1 || n > len(rows) {
			return nil
		}
		return &rows[n-1]
	}
	for _, c := range s.History {
		row := at(c.Phase)
		if row == nil {
			continue
		}
		cr := checkpointRow{EffortCheckpoint: c}
		for _, k := range slices.Sorted(maps.Keys(c.Proof)) {
			cr.ProofFields = append(cr.ProofFields, proofField{Name: k, Value: proofText(c.Proof[k])})
		}
		for _, ev := range c.Evidence {
			var m metEvidence
			if b, err := json.Marshal(ev); err == nil && json.Unmarshal(b, &m) == nil && m.Evidence != "" {
				cr.Met = append(cr.Met, m)
			}
		}
		row.Checkpoints = append(row.Checkpoints, cr)
	}
	for _, o := range s.Observations {
		if row := at(o.Phase); row != nil {
			row.Observed = append(row.Observed, o)
		}
	}
	return rows
}

// proofText is a proof value as text: a string as it is, anything else
// (a number, a list) as JSON.
func proofText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// effort is an effort's page: its header, its phases with their
// checkpoints and evidence, and its artifacts.
func (v *views) effort(w http.ResponseWriter, r *http.Request, ss session) error {
	s, err := v.api.EffortShow(r.Context(), r.PathValue("id"), "")
	if err != nil {
		return err
	}
	data := map[string]any{"Effort": s, "Phases": timeline(s), "Live": s.State == "active"}
	if a, err := api.ParseAgentTarget(s.Agent); err == nil {
		data["Scope"] = api.Target{Workflow: a.Workflow, Tag: a.Tag}.Display()
		data["Agent"] = a.Display()
	}
	return v.s.pages().render(w, r, "effort", ss, fmt.Sprintf("%s #%d", s.Skill, s.Ordinal), data)
}

// artifact is one of an effort's files, read-only.
func (v *views) artifact(w http.ResponseWriter, r *http.Request, ss session) error {
	ctx := r.Context()
	f, err := v.api.EffortArtifact(ctx, r.PathValue("id"), r.PathValue("name"))
	if err != nil {
		return err
	}
	s, err := v.api.EffortShow(ctx, r.PathValue("id"), "")
	if err != nil {
		return err
	}
	return v.s.pages().render(w, r, "artifact", ss, f.Name, map[string]any{"Effort": s, "File": f})
}

// effortsOf are the active efforts of team t by agent name; a daemon
// that serves no efforts has none.
func (v *views) effortsOf(r *http.Request, t api.Target) (map[string]*api.EffortRow, error) {
	l, err := v.api.Efforts(r.Context(), "", t.String(), false)
	if api.ErrorCode(err) == api.CodeUnavailable {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]*api.EffortRow{}
	for i, e := range l.Efforts {
		if a, err := api.ParseAgentTarget(e.Agent); err == nil && a.Workflow == t.Workflow && a.Tag == t.Tag {
			out[a.Agent] = &l.Efforts[i]
		}
	}
	return out, nil
}
