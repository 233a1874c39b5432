package contract

// Replay is the body of POST /runs/{id}/replay: a recorded run run again
// in a scratch team, and where the new run parted from the recording.
type Replay struct {
	// Of is the recorded run; Run is the replay's own run, whose
	// transcript `logs` shows like any other.
	Of  string `json:"of"`
	Run string `json:"run"`
	// Agent is the replay's agent in its scratch team (name@wf:replay-…),
	// which the user can inspect and which never posts into the real team.
	Agent   string   `json:"agent"`
	Backend string   `json:"backend"`
	State   RunState `json:"state"`
	Error   string   `json:"error,omitempty"`
	// Divergence is the first place the replay did something else than
	// the recording; nil: no divergence.
	Divergence *Divergence `json:"divergence,omitempty"`
	// PluginChanged says how the backend's plugin differs from the one
	// that made the recording ("" when it is the same binary).
	PluginChanged string `json:"plugin_changed,omitempty"`
	// Notes are what the replay could not make the same as the recording.
	Notes []string `json:"notes,omitempty"`
}

// Divergence is the first step at which a replay and its recording
// differ: Step counts the compared steps (text, tool calls, tool
// outcomes, the result) from 1.
type Divergence struct {
	Step     int    `json:"step"`
	What     string `json:"what"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
}
