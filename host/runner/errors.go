package runner

import (
	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/backend"
)

// This file is the backends' side of the plugin boundary of the error
// vocabulary: whatever a backend plugin returns is turned into the
// daemon's codes here, with api.FromSDK's one table, before it reaches the
// scheduler or the HTTP layer (host/docs does the same for documents).

// runError converts a backend's error, keeping its permanent mark (which
// decides whether the scheduler retries).
func runError(err error) error {
	coded := api.FromSDK(err)
	if coded != err && backend.IsPermanent(err) {
		return backend.Permanent(coded)
	}
	return coded
}
