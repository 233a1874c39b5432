// Package replay runs a recorded run again (`agent-worker runs replay`):
// a fresh plugin process for the agent's current definition, in a scratch
// team of its workflow (a paused tag of its own, so nothing there runs on
// its own and nothing reaches the real team's channel), shown the
// recorded inbox and context; an sdk run's model is a local server that
// serves the recorded model turns back in order (ModelServer), a mock
// run's model is its script. It then compares the two transcripts
// (Diverge) and says where the replay first did something else.
//
// Only host imports it; it reaches the supervisor and the plugin catalog
// through small interfaces of its own.
package replay
