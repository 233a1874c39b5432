package api

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTarget(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		want    Target
		display string
	}{
		// The anchor's cases (reference §5, §8) that stay valid.
		"alice":                        {Target{"alice", "global", "main"}, "alice"},
		"alice@review":                 {Target{"alice", "review", "main"}, "alice@review"},
		"alice@review:pr-123":          {Target{"alice", "review", "pr-123"}, "alice@review:pr-123"},
		"@review":                      {Target{"", "review", "main"}, "@review"},
		"@review:pr-123":               {Target{"", "review", "pr-123"}, "@review:pr-123"},
		"alice@global:pr-1":            {Target{"alice", "global", "pr-1"}, "alice@global:pr-1"},
		"alice@global":                 {Target{"alice", "global", "main"}, "alice"},
		"@global":                      {Target{"", "global", "main"}, "@global"},
		"code-reviewer@a.b_c":          {Target{"code-reviewer", "a.b_c", "main"}, "code-reviewer@a.b_c"},
		"test_runner@wf:v1.2":          {Target{"test_runner", "wf", "v1.2"}, "test_runner@wf:v1.2"},
		"A1@2024-review:3rd":           {Target{"A1", "2024-review", "3rd"}, "A1@2024-review:3rd"},
		"x@" + strings.Repeat("w", 64): {Target{"x", strings.Repeat("w", 64), "main"}, "x@" + strings.Repeat("w", 64)},
	}
	for in, tc := range tests {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTarget(in)
			if err != nil {
				t.Fatalf("ParseTarget(%q): %v", in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("ParseTarget(%q) (-want +got):\n%s", in, diff)
			}
			if d := got.Display(); d != tc.display {
				t.Errorf("Display() = %q, want %q", d, tc.display)
			}
			// Both forms parse back to the same target.
			for _, form := range []string{got.String(), got.Display()} {
				again, err := ParseTarget(form)
				if err != nil || again != got {
					t.Errorf("round trip of %q = %+v, %v; want %+v", form, again, err, got)
				}
			}
		})
	}
}

func TestParseTargetRejects(t *testing.T) {
	t.Parallel()
	// Each input is refused with a usage error that names the bad part. The
	// first group is what the anchor silently accepted.
	tests := map[string]string{
		"a@work@flow":                        "more than one '@'",
		"a@wf:tag:x":                         "more than one ':'",
		"alice@":                             "workflow after '@' is missing",
		"@":                                  "workflow after '@' is missing",
		"alice@review:":                      "tag after ':' is missing",
		"":                                   "empty target",
		"1alice":                             `agent name "1alice"`,
		"al ice":                             `agent name "al ice"`,
		"alice!":                             `agent name "alice!"`,
		"al/ice":                             `agent name "al/ice"`,
		"alice#x":                            `agent name "alice#x"`,
		"alice:main":                         `agent name "alice:main"`,
		"all":                                `"all" is reserved`,
		"system@review":                      `"system" is reserved`,
		"alice@-wf":                          `workflow name "-wf"`,
		"alice@wf:.tag":                      `tag name ".tag"`,
		"alice@w/f":                          `workflow name "w/f"`,
		"alice@wf:t g":                       `tag name "t g"`,
		strings.Repeat("a", 65):              "is 65 characters; at most 64",
		"x@" + strings.Repeat("w", 65):       "workflow name",
		"x@wf:" + strings.Repeat("t", 10000): "tag name \"tttt",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTarget(in)
			if err == nil {
				t.Fatalf("ParseTarget(%q) = %+v, want an error", in, got)
			}
			if ErrorCode(err) != CodeInvalid {
				t.Errorf("code = %q, want %q", ErrorCode(err), CodeInvalid)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
			if len(err.Error()) > 400 {
				t.Errorf("error is %d bytes: a long name must not be echoed whole", len(err.Error()))
			}
		})
	}
}

// A 10,000-character name says how long it is and what the limit is,
// without printing itself.
func TestLongAgentName(t *testing.T) {
	t.Parallel()
	err := ValidateAgentName(strings.Repeat("a", 10000))
	if err == nil || ErrorCode(err) != CodeInvalid || !strings.Contains(err.Error(), "is 10000 characters; at most 64") || len(err.Error()) > 200 {
		t.Errorf("error = %.300v", err)
	}
}

func TestParseAgentTargetRefusesScope(t *testing.T) {
	t.Parallel()
	_, err := ParseAgentTarget("@review:pr-1")
	if err == nil || !strings.Contains(err.Error(), "needs an agent") {
		t.Fatalf("ParseAgentTarget(@review:pr-1) error = %v, want one saying an agent is needed", err)
	}
}

func TestParseScopeTargetRefusesAgent(t *testing.T) {
	t.Parallel()
	_, err := ParseScopeTarget("a@web", "tasks")
	if want := "a@web is an agent: tasks belong to a workflow, give @web"; ErrorCode(err) != CodeInvalid || err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("ParseScopeTarget(a@web) error = %v, want %q", err, want)
	}
	if got, err := ParseScopeTarget("@review:pr-1", "tasks"); err != nil || got != (Target{Workflow: "review", Tag: "pr-1"}) {
		t.Fatalf("ParseScopeTarget(@review:pr-1) = %+v, %v", got, err)
	}
}

func TestErrorTable(t *testing.T) {
	t.Parallel()
	tests := map[Code]struct{ status, exit int }{
		CodeInvalid:      {400, ExitUsage},
		CodeNotFound:     {404, ExitNotFound},
		CodeConflict:     {409, ExitConflict},
		CodeUnauthorized: {401, ExitError},
		CodeInternal:     {500, ExitError},
		CodeUnavailable:  {503, ExitUnavailable},
		CodeUnreachable:  {502, ExitUnreachable},
		"no-such-code":   {500, ExitError},
	}
	for c, want := range tests {
		if got := HTTPStatus(c); got != want.status {
			t.Errorf("HTTPStatus(%q) = %d, want %d", c, got, want.status)
		}
		if got := ExitCode(c); got != want.exit {
			t.Errorf("ExitCode(%q) = %d, want %d", c, got, want.exit)
		}
	}
}
