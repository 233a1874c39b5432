// Package gate is the daemon's one decision on an agent's tool calls while
// it walks an effort (issue 43, invariant 17), and the evidence the daemon
// observes meanwhile. Every gated path asks it: the gate endpoint the
// plugins of daemon runs call before each workspace tool (sdk, mock), and
// the daemon's own MCP tools in process. Live sessions ask the same Decide.
//
// Decide reads the agent's active effort from the store on every call (a
// read of one indexed row), parses the effort's skill snapshot once per
// effort (the snapshot never changes), and asks the effort's current
// phase with skill.Phase.Check. An agent without an active effort is not
// gated. One exemption: a write to one of the effort's own artifact files
// of the current phase (1_IMPLEMENT_PLAN.md in plan) is allowed even when
// the phase denies the write tool, since the phase asks for that file.
//
// Observe records what a run did (a shell command and its exit status, a
// file written, a tool called) as an observation of the effort's current
// phase; Watch turns a run's events into observations as they stream, for
// host/runner. Watch also keeps the effort's own record current: the
// directories inside the effort's directory a run's file tools reached
// (store.AddEffortDirs, whose directive files host/efforts brings into
// the agent's next run), and its heartbeat and context use
// (store.HeartbeatEffort, at most once per BeatEvery and on each usage
// event). Evidence is never what the agent says: only a tool's own
// result counts.
//
// It imports the store, workflow/skill and sdk/backend (the run events it
// reads); host/mcpserver, host/httpapi and host/runner reach it through
// small interfaces of their own.
package gate
