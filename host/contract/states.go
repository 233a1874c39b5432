package contract

import "slices"

// AgentState is where an agent is in its life. The store keeps it, the
// scheduler moves it, and the wire carries it as the same string.
type AgentState string

// Agent states (SPEC.md). Paused and over_budget are set by the control
// plane; resume clears them and failed.
const (
	AgentIdle       AgentState = "idle"        // waiting for work
	AgentRunning    AgentState = "running"     // a run is in flight
	AgentPaused     AgentState = "paused"      // no new run starts until resumed
	AgentFailed     AgentState = "failed"      // its last run failed every attempt; its messages wait
	AgentOverBudget AgentState = "over_budget" // its budget is spent; no new run until resumed
	AgentStopped    AgentState = "stopped"     // its workflow stopped, or it left the workflow file
)

// AgentAttached is shown, never stored: an idle external agent that a
// Claude Code session acts as through its hooks (issue 30). The daemon
// never runs an external agent, so the session is all there is to say.
const AgentAttached AgentState = "attached"

// AgentStates lists every agent state, in the order of their life.
var AgentStates = []AgentState{AgentIdle, AgentRunning, AgentPaused, AgentFailed, AgentOverBudget, AgentStopped}

// RunState is where one run is.
type RunState string

// Run states (SPEC.md).
const (
	RunQueued    RunState = "queued"
	RunRunning   RunState = "running"
	RunSucceeded RunState = "succeeded"
	RunFailed    RunState = "failed"
	RunCancelled RunState = "cancelled" // ended on purpose: a user's cancel, the daemon stopping
	RunTimedOut  RunState = "timed_out" // ended by its run timeout
)

// RunStates lists every run state.
var RunStates = []RunState{RunQueued, RunRunning, RunSucceeded, RunFailed, RunCancelled, RunTimedOut}

// WorkflowState is where a workflow instance (workflow:tag) is.
type WorkflowState string

// Workflow states.
const (
	WorkflowRunning    WorkflowState = "running"
	WorkflowPaused     WorkflowState = "paused"
	WorkflowOverBudget WorkflowState = "over_budget"
	WorkflowFailed     WorkflowState = "failed"
	WorkflowStopped    WorkflowState = "stopped"
)

// WorkflowStates lists every workflow state.
var WorkflowStates = []WorkflowState{WorkflowRunning, WorkflowPaused, WorkflowOverBudget, WorkflowFailed, WorkflowStopped}

// TaskState is where a task of a team's board is (issue 16): pending
// until an agent claims it, claimed, in_progress from its first progress
// note, then completed or failed. A lost lease or a retried failure sends
// it back to pending. Any task not completed or failed may be cancelled
// (task_cancel, `tasks cancel`), with its subtasks.
type TaskState string

// Task states, in the order of their life.
const (
	TaskPending    TaskState = "pending"
	TaskClaimed    TaskState = "claimed"
	TaskInProgress TaskState = "in_progress"
	TaskCompleted  TaskState = "completed"
	TaskFailed     TaskState = "failed"
	TaskCancelled  TaskState = "cancelled"
)

// TaskStates lists every task state.
var TaskStates = []TaskState{TaskPending, TaskClaimed, TaskInProgress, TaskCompleted, TaskFailed, TaskCancelled}

// ParseAgentState checks a stored or sent agent state.
func ParseAgentState(s string) (AgentState, error) { return parseState(s, "agent", AgentStates) }

// ParseRunState checks a stored or sent run state.
func ParseRunState(s string) (RunState, error) { return parseState(s, "run", RunStates) }

// ParseWorkflowState checks a stored or sent workflow state.
func ParseWorkflowState(s string) (WorkflowState, error) {
	return parseState(s, "workflow", WorkflowStates)
}

func parseState[S ~string](s, what string, valid []S) (S, error) {
	for _, v := range valid {
		if string(v) == s {
			return v, nil
		}
	}
	return "", Errorf(CodeInvalid, "unknown %s state %q: want one of %v", what, s, valid)
}

// ParseTaskState checks a stored or sent task state.
func ParseTaskState(s string) (TaskState, error) { return parseState(s, "task", TaskStates) }

// Valid reports whether s is an agent state.
func (s AgentState) Valid() bool { return slices.Contains(AgentStates, s) }

// Valid reports whether s is a run state.
func (s RunState) Valid() bool { return slices.Contains(RunStates, s) }

// Valid reports whether s is a workflow state.
func (s WorkflowState) Valid() bool { return slices.Contains(WorkflowStates, s) }

// Schedulable reports whether the scheduler may start a run of an agent
// in this state (a run in flight finishes whatever the state becomes).
func (s AgentState) Schedulable() bool { return s == AgentIdle || s == AgentRunning }

// Live reports whether a workflow in this state is started and not
// stopped: it keeps its file watched and reloads edits, whether or not
// its agents may run right now (paused and over_budget hold new runs).
func (s WorkflowState) Live() bool {
	return s == WorkflowRunning || s == WorkflowPaused || s == WorkflowOverBudget
}

// Valid reports whether s is a task state.
func (s TaskState) Valid() bool { return slices.Contains(TaskStates, s) }

// Held reports whether a task in this state has a holder and a lease.
func (s TaskState) Held() bool { return s == TaskClaimed || s == TaskInProgress }

// Done reports whether a task in this state is over for good.
func (s TaskState) Done() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// Ended reports whether a run in this state is over.
func (s RunState) Ended() bool { return s != RunQueued && s != RunRunning }

func (s AgentState) String() string    { return string(s) }
func (s RunState) String() string      { return string(s) }
func (s WorkflowState) String() string { return string(s) }
func (s TaskState) String() string     { return string(s) }

// EffortState is where an effort is (issue 43): a skill applied to a
// directory is active until it is finished (its last phase done) or
// abandoned (with a reason). An agent has at most one active effort.
type EffortState string

// Effort states, in the order of their life.
const (
	EffortActive    EffortState = "active"
	EffortFinished  EffortState = "finished"
	EffortAbandoned EffortState = "abandoned"
)

// EffortStates lists every effort state.
var EffortStates = []EffortState{EffortActive, EffortFinished, EffortAbandoned}

// ParseEffortState checks a stored or sent effort state.
func ParseEffortState(s string) (EffortState, error) { return parseState(s, "effort", EffortStates) }

// Valid reports whether s is an effort state.
func (s EffortState) Valid() bool { return slices.Contains(EffortStates, s) }

// Ended reports whether an effort in this state is over: it takes no
// more phases, observations or heartbeats.
func (s EffortState) Ended() bool { return s == EffortFinished || s == EffortAbandoned }

func (s EffortState) String() string { return string(s) }
