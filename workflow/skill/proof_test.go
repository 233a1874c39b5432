package skill

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const proofSkill = `name: pr
description: proof under test
phases:
  - name: plan
    proof:
      plan_summary: string
      tests: int
      coverage: {type: number, description: percent of lines, optional: true}
      green: {type: bool, optional: true}
      files: {type: list, optional: true}
  - name: free
`

// TestProof pins the typed values and the one error that lists every
// problem, for proof from the CLI (text) and from MCP (JSON).
func TestProof(t *testing.T) {
	t.Parallel()
	s := mustParse(t, proofSkill)
	ph := s.Phase("plan")
	text := map[string]struct {
		in      map[string]string
		want    map[string]any
		wantErr string
	}{
		"all typed": {
			in:   map[string]string{"plan_summary": "add x", "tests": "3", "coverage": "81.5", "green": "yes", "files": "a.go, b.go"},
			want: map[string]any{"plan_summary": "add x", "tests": int64(3), "coverage": 81.5, "green": true, "files": []string{"a.go", "b.go"}},
		},
		"list as JSON": {
			in:   map[string]string{"plan_summary": "x", "tests": "0", "files": `["a,b.go"]`},
			want: map[string]any{"plan_summary": "x", "tests": int64(0), "files": []string{"a,b.go"}},
		},
		"every problem at once": {
			in:      map[string]string{"plan_summary": "  ", "tests": "many", "green": "maybe", "plan_sumary": "x", "zzz": "1"},
			wantErr: `proof for phase plan: plan_summary is missing (a string); tests must be an int: got "many"; green must be a bool: got "maybe"; unknown field "plan_sumary": did you mean plan_summary?; unknown field "zzz": its fields are plan_summary, tests, coverage, green, files`,
		},
	}
	for name, tt := range text {
		t.Run("text/"+name, func(t *testing.T) {
			t.Parallel()
			got, err := ph.CheckProofStrings(tt.in)
			checkProof(t, got, err, tt.want, tt.wantErr)
		})
	}
	jsonCases := map[string]struct {
		in      string
		want    map[string]any
		wantErr string
	}{
		"all typed": {
			in:   `{"plan_summary": "add x", "tests": 3, "coverage": 80, "green": false, "files": ["a.go"]}`,
			want: map[string]any{"plan_summary": "add x", "tests": int64(3), "coverage": 80.0, "green": false, "files": []string{"a.go"}},
		},
		"wrong types": {
			in:      `{"plan_summary": 3, "tests": 2.5, "coverage": "high", "green": "true", "files": ["a", 1]}`,
			wantErr: `proof for phase plan: plan_summary must be a string: got the number 3; tests must be an int: got the number 2.5; coverage must be a number: got "high"; green must be a bool: got "true"; files must be a list of strings: item 2 is the number 1, not a string`,
		},
		"missing": {
			in:      `{}`,
			wantErr: `proof for phase plan: plan_summary is missing (a string); tests is missing (an int)`,
		},
	}
	for name, tt := range jsonCases {
		t.Run("json/"+name, func(t *testing.T) {
			t.Parallel()
			var in map[string]any
			if err := json.Unmarshal([]byte(tt.in), &in); err != nil {
				t.Fatal(err)
			}
			got, err := ph.CheckProof(in)
			checkProof(t, got, err, tt.want, tt.wantErr)
		})
	}
	_, err := s.Phase("free").CheckProof(map[string]any{"x": "1"})
	checkProof(t, nil, err, nil, `proof for phase free: unknown field "x": this phase takes no proof`)
}

func checkProof(t *testing.T, got map[string]any, err error, want map[string]any, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || err.Error() != wantErr {
			t.Errorf("error\n%v\nwant\n%s", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}
