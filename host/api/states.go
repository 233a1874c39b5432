package api

import "github.com/agent-worker/agent-worker/host/contract"

// The states of agents, runs, workflows and tasks are host/contract's.
type (
	AgentState    = contract.AgentState
	RunState      = contract.RunState
	WorkflowState = contract.WorkflowState
	TaskState     = contract.TaskState
)

const (
	AgentIdle          = contract.AgentIdle
	AgentRunning       = contract.AgentRunning
	AgentPaused        = contract.AgentPaused
	AgentFailed        = contract.AgentFailed
	AgentOverBudget    = contract.AgentOverBudget
	AgentStopped       = contract.AgentStopped
	RunQueued          = contract.RunQueued
	RunRunning         = contract.RunRunning
	RunSucceeded       = contract.RunSucceeded
	RunFailed          = contract.RunFailed
	RunCancelled       = contract.RunCancelled
	RunTimedOut        = contract.RunTimedOut
	WorkflowRunning    = contract.WorkflowRunning
	WorkflowPaused     = contract.WorkflowPaused
	WorkflowOverBudget = contract.WorkflowOverBudget
	WorkflowFailed     = contract.WorkflowFailed
	WorkflowStopped    = contract.WorkflowStopped
	TaskPending        = contract.TaskPending
	TaskClaimed        = contract.TaskClaimed
	TaskInProgress     = contract.TaskInProgress
	TaskCompleted      = contract.TaskCompleted
	TaskFailed         = contract.TaskFailed
	TaskCancelled      = contract.TaskCancelled
	AgentAttached      = contract.AgentAttached
)

var (
	AgentStates    = contract.AgentStates
	RunStates      = contract.RunStates
	WorkflowStates = contract.WorkflowStates
	TaskStates     = contract.TaskStates
)

// ParseAgentState reads a state (contract.ParseAgentState).
func ParseAgentState(s string) (contract.AgentState, error) { return contract.ParseAgentState(s) }

// ParseRunState reads a state (contract.ParseRunState).
func ParseRunState(s string) (contract.RunState, error) { return contract.ParseRunState(s) }

// ParseWorkflowState reads a state (contract.ParseWorkflowState).
func ParseWorkflowState(s string) (contract.WorkflowState, error) {
	return contract.ParseWorkflowState(s)
}

// ParseTaskState reads a state (contract.ParseTaskState).
func ParseTaskState(s string) (contract.TaskState, error) { return contract.ParseTaskState(s) }
