package claudehook

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/tools"
)

func TestCalls(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		tool, input string
		want        []tools.GateCall
	}{
		"bash":             {"Bash", `{"command":"git commit -m x"}`, []tools.GateCall{{Tool: "Bash", Command: "git commit -m x"}}},
		"relative edit":    {"Edit", `{"file_path":"main.go","old_string":"a"}`, []tools.GateCall{{Tool: "Edit", Path: "/work/p/main.go"}}},
		"absolute write":   {"Write", `{"file_path":"/tmp/x","content":"y"}`, []tools.GateCall{{Tool: "Write", Path: "/tmp/x"}}},
		"notebook":         {"NotebookEdit", `{"notebook_path":"a.ipynb"}`, []tools.GateCall{{Tool: "NotebookEdit", Path: "/work/p/a.ipynb"}}},
		"other mcp server": {"mcp__github__create_pr", `{}`, []tools.GateCall{{Tool: "mcp__github__create_pr"}}},
		"the daemon's own": {"mcp__agent-worker__channel_send", `{"message":"hi"}`, nil},
		"broken input":     {"Read", `not json`, []tools.GateCall{{Tool: "Read"}}},
	}
	for name, c := range cases {
		got := Calls(Input{ToolName: c.tool, ToolInput: json.RawMessage(c.input), Cwd: "/work/p"}, "agent-worker")
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", name, diff)
		}
	}
}

func TestDenyIsClaudesShape(t *testing.T) {
	t.Parallel()
	b, _ := json.Marshal(NewDeny("phase plan does not allow Edit", false))
	want := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"phase plan does not allow Edit"}}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
}
