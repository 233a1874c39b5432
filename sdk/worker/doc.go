// Package worker is for backend authors: it lets a backend act as its agent
// on the daemon's MCP server (Connect and the typed tool methods), gather
// what a run needs (Fetch: from the request's RunContext when the daemon
// sent one, else over MCP) and turn it into the prompt every backend
// shares (BuildPrompt). The daemon serves only raw data and never builds
// prompts (ARCHITECTURE.md invariant 6), so a backend that wants the
// team's usual behaviour starts here:
//
//	c, err := worker.Connect(ctx, req.Daemon)
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	wc, err := worker.Fetch(ctx, c, req)
//	if err != nil {
//		return err
//	}
//	prompt := worker.BuildPrompt(wc)
//
// A backend never acks its inbox: the daemon acks the messages a run was
// shown when the run succeeds.
package worker
