package skill

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/agent-worker/agent-worker/workflow"
)

// A ProofError lists everything wrong with the proof given to leave a
// phase: fields missing, unknown or of the wrong type.
type ProofError struct {
	Phase    string
	Problems []string
}

func (e *ProofError) Error() string {
	return fmt.Sprintf("proof for phase %s: %s", e.Phase, strings.Join(e.Problems, "; "))
}

// CheckProofStrings checks proof given as text, as the CLI's --proof k=v
// gives it: an int and a number are read as Go reads them, a bool as
// true/false (also 1/0, yes/no), a list as a JSON array of strings or as
// items separated by commas. It returns the values typed as CheckProof
// does.
func (p *Phase) CheckProofStrings(proof map[string]string) (map[string]any, error) {
	in := make(map[string]any, len(proof))
	for k, v := range proof {
		in[k] = v
	}
	return p.checkProof(in, true)
}

// CheckProof checks proof decoded from JSON (MCP effort_continue): every
// required field present, none unknown, each of its type. It returns the
// values as string, int64, float64, bool or []string, or a *ProofError
// naming every problem at once.
func (p *Phase) CheckProof(proof map[string]any) (map[string]any, error) {
	return p.checkProof(proof, false)
}

func (p *Phase) checkProof(proof map[string]any, text bool) (map[string]any, error) {
	var probs []string
	out := map[string]any{}
	names := make([]string, len(p.Proof))
	for i, f := range p.Proof {
		names[i] = f.Name
		v, ok := proof[f.Name]
		if !ok || v == nil || isBlank(v) {
			if !f.Optional {
				probs = append(probs, fmt.Sprintf("%s is missing (%s)", f.Name, f.describe()))
			}
			continue
		}
		typed, err := convert(f.Type, v, text)
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s must be %s: %v", f.Name, article(f.Type), err))
			continue
		}
		out[f.Name] = typed
	}
	for _, k := range slices.Sorted(maps.Keys(proof)) {
		if slices.Contains(names, k) {
			continue
		}
		msg := fmt.Sprintf("unknown field %s", strconv.Quote(k))
		switch best := workflow.Closest(k, names); {
		case best != "":
			msg += ": did you mean " + best + "?"
		case len(names) == 0:
			msg += ": this phase takes no proof"
		default:
			msg += ": its fields are " + strings.Join(names, ", ")
		}
		probs = append(probs, msg)
	}
	if len(probs) > 0 {
		return nil, &ProofError{Phase: p.Name, Problems: probs}
	}
	return out, nil
}

func (f ProofField) describe() string {
	s := article(f.Type)
	if f.Description != "" {
		s += ": " + f.Description
	}
	return s
}

func article(t ProofType) string {
	switch t {
	case ProofInt:
		return "an int"
	case ProofList:
		return "a list of strings"
	}
	return "a " + string(t)
}

// isBlank is an empty or all-space string: no proof at all.
func isBlank(v any) bool {
	s, ok := v.(string)
	return ok && strings.TrimSpace(s) == ""
}

// convert reads v as type t; text marks a value typed on a command line.
func convert(t ProofType, v any, text bool) (any, error) {
	s, isString := v.(string)
	if text && isString {
		return fromText(t, s)
	}
	got := func() error { return fmt.Errorf("got %s", describeValue(v)) }
	switch t {
	case ProofString:
		if isString {
			return s, nil
		}
	case ProofInt:
		switch n := v.(type) {
		case float64:
			if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
				return int64(n), nil
			}
		case int:
			return int64(n), nil
		case int64:
			return n, nil
		case json.Number:
			if i, err := n.Int64(); err == nil {
				return i, nil
			}
		}
	case ProofNumber:
		switch n := v.(type) {
		case float64:
			return n, nil
		case int:
			return float64(n), nil
		case int64:
			return float64(n), nil
		case json.Number:
			if f, err := n.Float64(); err == nil {
				return f, nil
			}
		}
	case ProofBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case ProofList:
		switch l := v.(type) {
		case []string:
			return l, nil
		case []any:
			out := make([]string, len(l))
			for i, item := range l {
				s, ok := item.(string)
				if !ok {
					return nil, fmt.Errorf("item %d is %s, not a string", i+1, describeValue(item))
				}
				out[i] = s
			}
			return out, nil
		}
	}
	return nil, got()
}

func fromText(t ProofType, s string) (any, error) {
	got := fmt.Errorf("got %s", strconv.Quote(s))
	switch t {
	case ProofInt:
		i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, got
		}
		return i, nil
	case ProofNumber:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, got
		}
		return f, nil
	case ProofBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "yes", "1":
			return true, nil
		case "false", "no", "0":
			return false, nil
		}
		return nil, got
	case ProofList:
		if strings.HasPrefix(strings.TrimSpace(s), "[") {
			var l []string
			if err := json.Unmarshal([]byte(s), &l); err != nil {
				return nil, fmt.Errorf("got %s, which is not a JSON array of strings", strconv.Quote(s))
			}
			return l, nil
		}
		var l []string
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				l = append(l, item)
			}
		}
		return l, nil
	}
	return s, nil
}

// describeValue names a JSON value's type and shows a short one.
func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case bool:
		return fmt.Sprintf("the bool %v", x)
	case float64, int, int64, json.Number:
		return fmt.Sprintf("the number %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
