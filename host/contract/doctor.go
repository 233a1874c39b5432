package contract

// Doctor is the body of GET /doctor: what `agent-worker doctor` needs
// from the daemon beyond GET /health, because only the daemon's own
// process can see it.
type Doctor struct {
	// Env names the variables of the daemon's environment that its
	// plugins inherit and that are set (PATH, ANTHROPIC_API_KEY, …): which
	// API keys a run can read. Names only, never values.
	Env []string `json:"env"`
	// DefaultModel is the model of an sdk agent created without one,
	// whose service's key the sdk backend needs.
	DefaultModel string `json:"default_model"`
	// Disk is the free space where the daemon keeps its home.
	Disk Disk `json:"disk"`
	// StoreBytes is the size of the SQLite database with its journal; 0 on
	// a PostgreSQL store.
	StoreBytes int64 `json:"store_bytes,omitempty"`
}

// Disk is the free space of the file system holding Path, as an
// unprivileged process may use it; Error says why it could not be read.
type Disk struct {
	Path      string `json:"path"`
	FreeBytes uint64 `json:"free_bytes"`
	Error     string `json:"error,omitempty"`
}
