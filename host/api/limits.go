package api

import "github.com/agent-worker/agent-worker/workflow"

// Size limits the daemon enforces, here so that a client can refuse a file
// before reading it and sending it. See workflow.MaxFileBytes.
const (
	MaxWorkflowFileBytes = workflow.MaxFileBytes
	MaxSystemPromptBytes = workflow.MaxSystemPromptBytes
)

// ReadSystemPromptFile reads a system prompt from a file for an AgentSpec,
// refusing a file over MaxSystemPromptBytes by its size, without reading it
// whole.
func ReadSystemPromptFile(path string) (string, error) {
	b, err := workflow.ReadLimited(path, "system prompt file "+path, MaxSystemPromptBytes)
	return string(b), err
}
