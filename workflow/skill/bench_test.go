package skill

import "testing"

// BenchmarkCheck is the gate's cost for one shell call under an allow list
// (issue 43's goal: the gate adds at most 0.1 ms to a tool call).
func BenchmarkCheck(b *testing.B) {
	s, err := Parse("SKILL.md", []byte("---\n"+gateSkill+"\n---\n"))
	if err != nil {
		b.Fatal(err)
	}
	ph := s.Phase("check")
	call := Call{Tool: "run_shell", Command: `cd sub && GOFLAGS=-count=1 go test -run 'TestX|TestY' ./pkg/... 2>&1 && go vet ./...`}
	for b.Loop() {
		if !ph.Check(call).Allowed {
			b.Fatal("refused")
		}
	}
}
