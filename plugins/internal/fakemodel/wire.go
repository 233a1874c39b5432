package fakemodel

import "github.com/agent-worker/agent-worker/internal/modelwire"

// answer is turn t as modelwire writes it: its text streamed in two
// deltas, so clients are seen to join them.
func answer(t Turn) modelwire.Answer {
	a := modelwire.Answer{Model: "fake", Text: t.Text, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, Split: true}
	for _, c := range t.Tools {
		a.Tools = append(a.Tools, modelwire.Call{ID: c.ID, Name: c.Name, Args: argsJSON(c)})
	}
	return a
}
